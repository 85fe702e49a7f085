#!/usr/bin/env bash
# The Kurma network API: `add` and `del` symlinks called as Kurma calls
# /opt/network/add and /opt/network/del: NETNS (a /proc/PID/ns/net path) UUID
# [IFNAME] on the command line, one network definition on stdin (Kurma's
# aci, default and containerInterface keys ignored), the result printed in
# the ip4/ip6 form of the Kurma spec, several pods at once.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/runtime/helpers.sh"

export CNI_CACHE_DIR=$RT_CACHE
if "$CNI_BIN" --list | grep -qx bridge && "$CNI_BIN" --list | grep -qx host-local; then
	export CNI_PATH=$T_BIN
elif [ -x "$RT_REF/bridge" ]; then
	export CNI_PATH=$T_BIN:$RT_REF
else
	echo "1..0 # SKIP no bridge plugin"
	exit 0
fi
br=trtk$$
t_defer "ip link del $br 2>/dev/null; true"
def='{
  "name": "trt-kurma",
  "aci": "apcera.com/kurma/cni-netplugin",
  "default": true,
  "containerInterface": "eth1",
  "type": "bridge",
  "bridge": "'$br'",
  "isGateway": true,
  "ipMasq": false,
  "ipam": {
    "type": "host-local",
    "dataDir": "'$T_TMP/ipam'",
    "subnet": "10.200.58.0/24",
    "routes": [ { "dst": "0.0.0.0/0" } ]
  }
}'

# pod N: a process in namespace kN; Kurma hands out /proc/PID/ns/net.
pod() {
	local ns pid
	ns=$(t_netns "k$1") || return 1
	ip netns exec "${ns##*/}" sleep 600 >/dev/null 2>&1 &
	pid=$!
	t_defer "kill $pid"
	echo "/proc/$pid/ns/net"
}
uuid() { printf '146d7cef-fbf6-41da-a2f8-%012d' "$1"; }
kadd() { # kadd ARGS... < definition: sets OUT, ERR, RC
	OUT=$("$T_BIN/add" "$@" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
}
kdel() {
	OUT=$("$T_BIN/del" "$@" 2>"$T_TMP/err")
	RC=$?
	ERR=$(cat "$T_TMP/err")
}

p1=$(pod 1)
kadd "$p1" "$(uuid 1)" eth0 <<<"$def"
t_is "add NETNS UUID IFNAME < definition" "$RC" 0
[ "$RC" = 0 ] || t_diag "$OUT" "$ERR"
t_json "the Kurma result: ip4 with ip and gateway" '.ip4.ip + " " + .ip4.gateway' "10.200.58.2/24 10.200.58.1"
t_json "  and its routes" '.ip4.routes[0].dst' "0.0.0.0/0"
t_json "  nothing else (no cniVersion, no ip6, no empty dns)" 'keys|join(",")' "ip4"
t_like "eth0 holds the address in the pod" "$(nsenter --net="$p1" ip -br addr show eth0)" '10\.200\.58\.2/24'
t_ok "cached under the UUID" test -f "$(rt_cache_file trt-kurma "$(uuid 1)" eth0)"
kadd "$p1" "$(uuid 1)" eth0 <<<"$def"
t_is "a second add of the same pod fails" "$RC:$(jq -r .code <<<"$OUT" 2>/dev/null)" "1:4"
t_like "  with the CNI error on stdout" "$(jq -r .msg <<<"$OUT" 2>/dev/null)" 'already attached'
t_like "  and a message on stderr" "$ERR" '^add: .*already attached'
t_like "  leaving the pod as it was" "$(nsenter --net="$p1" ip -br addr show eth0)" '10\.200\.58\.2/24'
kdel "$p1" "$(uuid 1)" eth0 <<<"$def"
t_is "del NETNS UUID IFNAME < definition" "$RC:$OUT" "0:"
t_nok "eth0 is gone from the pod" nsenter --net="$p1" ip link show eth0
t_nok "the address is released" rt_ip_held trt-kurma 10.200.58.2
t_nok "the cache entry is gone" test -e "$(rt_cache_file trt-kurma "$(uuid 1)" eth0)"
kdel "$p1" "$(uuid 1)" eth0 <<<"$def"
t_is "del again succeeds" "$RC:$OUT" "0:"

# Without IFNAME, containerInterface names the interface.
kadd "$p1" "$(uuid 1)" <<<"$def"
t_is "add without IFNAME" "$RC" 0
t_ok "  configures containerInterface (eth1)" nsenter --net="$p1" ip link show eth1
kdel "$p1" "$(uuid 1)" <<<"$def"
t_is "del without IFNAME" "$RC:$OUT" "0:"
t_nok "  eth1 is gone" nsenter --net="$p1" ip link show eth1

# Several pods at once, as Kurma may start them.
declare -A pp
for i in 2 3 4 5 6; do pp[$i]=$(pod $i); done
pids=()
for i in 2 3 4 5 6; do
	"$T_BIN/add" "${pp[$i]}" "$(uuid $i)" eth0 <<<"$def" >"$T_TMP/add.$i" 2>&1 &
	pids+=($!)
done
fails=0
for pid in "${pids[@]}"; do wait "$pid" || fails=$((fails + 1)); done
t_is "five concurrent adds succeed" "$fails" 0
addrs=$(for i in 2 3 4 5 6; do jq -r .ip4.ip "$T_TMP/add.$i" 2>/dev/null; done | sort -u | grep -c '^10\.200\.58\.')
t_is "  with five distinct addresses" "$addrs" 5
t_ok "pod 2 reaches pod 6" nsenter --net="${pp[2]}" ping -c1 -W2 "$(jq -r '.ip4.ip|split("/")[0]' "$T_TMP/add.6")"
pids=()
for i in 2 3 4 5 6; do
	"$T_BIN/del" "${pp[$i]}" "$(uuid $i)" eth0 <<<"$def" >"$T_TMP/del.$i" 2>&1 &
	pids+=($!)
done
fails=0
for pid in "${pids[@]}"; do wait "$pid" || fails=$((fails + 1)); done
t_is "five concurrent dels succeed, silently" "$fails:$(cat "$T_TMP"/del.?)" "0:"
t_is "no address held" "$(ls "$T_TMP/ipam/trt-kurma" 2>/dev/null | grep -c '^10\.')" 0
t_is "no cache entry left" "$(ls "$RT_CACHE/results" 2>/dev/null | grep -c trt-kurma)" 0

# A definition without cniVersion (Kurma's era): loopback answers in ip4/ip6.
kadd "$p1" "$(uuid 9)" lo <<<'{"name":"trt-klo","type":"loopback","aci":"x"}'
t_is "a loopback definition" "$RC:$(jq -c . <<<"$OUT")" '0:{"ip4":{"ip":"127.0.0.1/8"},"ip6":{"ip":"::1/128"}}'
kdel "$p1" "$(uuid 9)" lo <<<'{"name":"trt-klo","type":"loopback"}'
t_is "  and its del" "$RC:$OUT" "0:"

# Failures: a message on stdout and stderr, exit non-zero.
kadd "$p1" "$(uuid 1)" eth0 <<<'{"name":"trt-kbad","type":"nosuchplugin"}'
t_is "an unknown type fails (code 7)" "$RC:$(jq -r .code <<<"$OUT" 2>/dev/null)" "1:7"
t_like "  saying so on stderr" "$ERR" 'nosuchplugin.*not found'
kadd "$p1" "$(uuid 1)" eth0 <<<'{"name":'
t_is "a definition that is not JSON fails (code 6)" "$RC:$(jq -r .code <<<"$OUT" 2>/dev/null)" "1:6"
kadd "$p1" </dev/null
t_like "add without a UUID: usage" "$RC:$ERR" '^2:Usage: add NETNS UUID'
t_done
