# A cluster node of the harness: runs its own Docker engine so the roles run unchanged on it.
FROM llmops-node-base:test
COPY node-entrypoint.sh /usr/local/sbin/node-entrypoint
# What an Atlas 800 A2 node has that the engine containers mount (empty stand-ins), and a model
# directory with a config.json: the weights themselves never exist here.
RUN mkdir -p /usr/local/Ascend/driver /usr/local/Ascend/firmware /usr/local/sbin /usr/local/dcmi /etc/hixlep \
        /root/.cache/GLM-5.3-Flash-w8a8 /data/weights \
 && touch /usr/local/sbin/npu-smi /etc/hccn.conf /etc/ascend_install.info \
 && echo '{"architectures": ["SimulatedForTests"]}' > /root/.cache/GLM-5.3-Flash-w8a8/config.json
ENTRYPOINT ["/usr/local/sbin/node-entrypoint"]
