# What the harness nodes run. NOT a vLLM image: `vllm` here is the simulated engine of
# tests/harness/sim_vllm; the PD proxy, mooncake_master and the Memcache MetaService are the real ones.
FROM llmops-engine-base:test
ARG PIP_PACKAGES
COPY host-ca.crt /etc/ssl/certs/host-ca.crt
RUN python3 -m venv /opt/sim \
 && PIP_CERT=/etc/ssl/certs/host-ca.crt /opt/sim/bin/pip install -q --no-cache-dir --disable-pip-version-check $PIP_PACKAGES
ENV PATH=/opt/sim/bin:$PATH
COPY load_balance_proxy_server_example.py /vllm-workspace/vllm-ascend/examples/disaggregated_prefill_v1/
# the simulator: vllm_sim.py and the sim_*.py modules it imports, side by side
COPY vllm_sim.py sim_*.py /opt/sim/lib/
RUN printf '#!/bin/sh\nexec /opt/sim/bin/python /opt/sim/lib/vllm_sim.py "$@"\n' > /usr/local/bin/vllm \
 && chmod +x /usr/local/bin/vllm && mkdir -p /workspace
WORKDIR /workspace
