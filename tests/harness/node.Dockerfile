# A cluster node of the harness: runs its own Docker engine so the roles run unchanged on it.
FROM llmops-node-base:test
COPY node-entrypoint.sh /usr/local/sbin/node-entrypoint
# Simulated host tools (tests only): npu-smi reports the processes really holding /dev/davinciN;
# hccn_tool answers link, health, ip, tls and ping queries from state files the tests write.
COPY sim_host/npu_smi.py /usr/local/lib/llmops-sim/
COPY sim_host/hccn_tool.sh /usr/local/Ascend/driver/tools/hccn_tool
# GPU nodes (NODE_GPUS > 0): the entrypoint puts a simulated nvidia-container-runtime-hook and nvidia-smi on the PATH.
COPY sim_host/nvidia_hook.sh sim_host/nvidia_smi.sh /usr/local/lib/llmops-sim/
# What an Ascend node has that the engine containers mount (empty stand-ins; the 950DT's urma_admin,
# route.conf and hccl_rootinfo.json too), and the seeds' model directories with a config.json and an
# empty weights file: real weights never exist here.
RUN mkdir -p /usr/local/Ascend/driver/tools /usr/local/Ascend/driver/lib64 /usr/local/Ascend/firmware /usr/local/sbin \
        /usr/local/dcmi /etc/hixlep /root/.cache/GLM-5.3-Flash-w8a8 /data/weights/GLM-4.7-W8A8-floatmtp /data/weights/GLM-4.7-FP8 \
 && printf '#!/bin/sh\nexec python3 /usr/local/lib/llmops-sim/npu_smi.py "$@"\n' >/usr/local/sbin/npu-smi \
 && chmod 755 /usr/local/sbin/npu-smi && ln -s /usr/local/sbin/npu-smi /usr/local/bin/npu-smi \
 && chmod 755 /usr/local/Ascend/driver/tools/hccn_tool /usr/local/lib/llmops-sim/nvidia_hook.sh /usr/local/lib/llmops-sim/nvidia_smi.sh \
 && touch /usr/local/Ascend/driver/version.info /etc/hccn.conf /etc/ascend_install.info /etc/hccl_rootinfo.json /lib/route.conf \
 && printf '#!/bin/sh\nexit 0\n' >/usr/bin/urma_admin && chmod 755 /usr/bin/urma_admin \
 && for model in /root/.cache/GLM-5.3-Flash-w8a8 /data/weights/GLM-4.7-W8A8-floatmtp /data/weights/GLM-4.7-FP8; do \
        echo '{"architectures": ["SimulatedForTests"]}' > "$model/config.json"; \
        touch "$model/model-00001-of-00001.safetensors"; done
# Every node makes its own SSH host keys at start (the root file system's would be shared by all).
RUN rm -f /etc/ssh/ssh_host_*
ENTRYPOINT ["/usr/local/sbin/node-entrypoint"]
