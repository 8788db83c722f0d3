#!/bin/sh
# A SIMULATED `hccn_tool` for harness nodes. Not part of the product, never shipped.
#
# Answers the queries the collection's preflight makes, for each /dev/davinciN of the node, in the
# shape of the real tool's output: `-i N -link -g` ("link status: UP"), `-net_health -g` ("net
# health status: Success"), `-ip -g` ("ipaddr:... / netmask:..."), `-tls -g` ("... tls switch[0]
# ..."), `-ping -g address IP` (packets transmitted / received). NPU N of a node whose harness
# address (eth0) ends in .X has 192.168.X.(10+N). Faults come from files the tests write under
# /var/lib/llmops-sim/hccn: link.N (DOWN), health.N (Init), tls.N (1), unreachable (one address a
# line); a ping reaches every other simulated NPU address. A shell script: preflight asks 32
# questions per node, and a Python start-up for each would be most of what the harness measures.
state=${LLMOPS_SIM_HCCN_STATE:-/var/lib/llmops-sim/hccn}
usage() { echo "hccn_tool (simulated): usage hccn_tool -i N -link|-net_health|-ip|-tls -g | -ping -g address IP" >&2; exit 2; }
[ "$1" = "-i" ] && [ -n "$2" ] || usage
npu=$2
shift 2
[ -e "/dev/davinci$npu" ] || { echo "device $npu does not exist" >&2; exit 1; }
value() { if [ -f "$state/$1.$npu" ]; then cat "$state/$1.$npu"; else echo "$2"; fi; }
octet() { ip -4 -o addr show dev eth0 | sed -n 's|.* inet [0-9]*\.[0-9]*\.[0-9]*\.\([0-9]*\)/.*|\1|p' | head -1; }
case "$*" in
  "-link -g") echo "link status: $(value link UP)" ;;
  "-net_health -g") echo "net health status: $(value health Success)" ;;
  "-ip -g") printf 'ipaddr:192.168.%s.%s\nnetmask:255.255.255.0\n' "$(octet)" "$((10 + npu))" ;;
  "-tls -g") echo "dev_id:$npu, tls switch[$(value tls 0)](0:disable, 1:enable), tls preconfigured[1](0:non-preset, 1:preset), tls alarm time threshold[60]days" ;;
  "-ping -g address "*)
    address=$4
    echo "device $npu PING $address"
    if echo "$address" | grep -Eq '^192\.168\.[0-9]+\.[0-9]+$' && ! grep -qxF "$address" "$state/unreachable" 2>/dev/null; then
      echo "3 packets transmitted, 3 received, 0.00% packet loss"
    else
      echo "3 packets transmitted, 0 received, 100.00% packet loss"
    fi ;;
  *) echo "hccn_tool (simulated): $* is not simulated" >&2; exit 2 ;;
esac
