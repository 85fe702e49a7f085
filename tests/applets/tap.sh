#!/usr/bin/env bash
# tap: a persistent tap in a container namespace, with owner, group,
# multi-queue, MTU, MAC and bridge. The applet runs inside a test namespace
# acting as the host (`ip netns exec`); nothing touches the real host.
. "$CNI_TESTS/lib.sh"
export CNI_PATH="$T_BIN:/usr/lib/cni"

hostns=$(t_netns taphost); H=${hostns##*/}
contns=$(t_netns tapcont); C=${contns##*/}

hrun() { # APPLET CMD NETNS IFNAME ID [ARGS], as cni_run, inside the host namespace
	OUT=$(ip netns exec "$H" env CNI_COMMAND="$2" CNI_NETNS="$3" CNI_IFNAME="$4" \
		CNI_CONTAINERID="$5" CNI_ARGS="${6-}" CNI_PATH="$CNI_PATH" \
		"$T_BIN/$1" 2>"$T_TMP/stderr")
	RC=$?
	ERR=$(cat "$T_TMP/stderr")
}
state() {
	ip -n "$1" -br link | awk '{print $1, $3}'
	ip -n "$1" -br addr
	ip -n "$1" route show table all | grep -v '^local\|^broadcast\|^multicast\|^fe80\|^ff00'
	ls -R "$T_TMP/ipam" 2>/dev/null | grep -cE '^[0-9a-f.:]+$'
}
sysfs() { ip netns exec "$C" cat "/sys/class/net/$1/$2"; }
ipam='"ipam":{"type":"host-local","dataDir":"'"$T_TMP/ipam"'","subnet":"10.200.77.0/24"}'
conf() { jq -c ". + ${1:-{\}}" <<<"{\"cniVersion\":\"1.1.0\",\"name\":\"tapnet\",\"type\":\"tap\",$ipam}"; }
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
hbefore=$(state "$H"); cbefore=$(state "$C")

bad() { # DESC REGEX PATCH [ARGS]: code 7 before any change
	hrun tap ADD "$contns" ttap0 c-bad "${4-}" <<<"$(conf "$3")"
	t_err "$1" 7 "$2"
}
bad "owner negative" '^owner' '{"owner":-1}'
bad "owner not a number" '^owner: expected' '{"owner":"root"}'
bad "group beyond 32 bits" '^group' '{"group":4294967296}'
bad "mtu negative" '^mtu' '{"mtu":-5}'
bad "multiQueue not a boolean" '^multiQueue' '{"multiQueue":1}'
bad "bad mac" '^mac: invalid MAC' '{"mac":"nope"}'
bad "bad CNI_ARGS MAC" '^CNI_ARGS MAC: invalid' '{}' 'MAC=1'
bad "bridge not a name" '^bridge: not a valid' '{"bridge":"a/b"}'
bad "bridge that does not exist" '^bridge: link "ttapnone" not found in the container' '{"bridge":"ttapnone"}'
bad "selinuxContext not a string" '^selinuxContext' '{"selinuxContext":7}'
t_is "bad configs left the host unchanged" "$(state "$H")" "$hbefore"
t_is "bad configs left the container unchanged" "$(state "$C")" "$cbefore"

if [ ! -e /dev/net/tun ]; then
	t_skip "tap devices" "kernel lacks tun/tap support (no /dev/net/tun)"
	t_done
fi

c=$(conf '{"owner":1000,"group":100,"multiQueue":true,"mtu":1400,"mac":"02:7a:00:00:00:01","selinuxContext":"system_u:system_r:container_t:s0"}')
hrun tap ADD "$contns" ttap0 c1 <<<"$c"
t_is "ADD exits 0" "$RC" 0
t_json "interface" '.interfaces[0] | "\(.name) \(.mac) \(.sandbox)"' "ttap0 02:7a:00:00:00:01 $contns"
t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "10.200.77.2/24 0"
t_like "selinuxContext ignored with a note on stderr" "$ERR" 'selinuxContext .* ignored'
prev=$OUT
t_is "owner" "$(sysfs ttap0 owner)" 1000
t_is "group" "$(sysfs ttap0 group)" 100
t_is "tap, no packet info, multi-queue" "$(( $(sysfs ttap0 tun_flags) & 0x1103 ))" $((0x1102))
d=$(ip -n "$C" -d -j link show ttap0)
t_is "MTU, MAC, up" "$(jq -r '.[0] | "\(.mtu) \(.address) \(.flags | index("UP") != null)"' <<<"$d")" \
	"1400 02:7a:00:00:00:01 true"
t_like "persistent" "$(ip -n "$C" -d link show ttap0)" 'persist on'
t_like "address applied" "$(ip -n "$C" -br addr show ttap0)" '10.200.77.2/24'
t_is "host unchanged by ADD" "$(state "$H" | head -n -1)" "$(head -n -1 <<<"$hbefore")"

hrun tap CHECK "$contns" ttap0 c1 <<<"$(with_prev "$c" "$prev")"
t_is "CHECK passes" "$RC:$OUT" "0:"
hrun tap CHECK "$contns" ttap0 c1 <<<"$(with_prev "$(jq -c '.owner = 1001' <<<"$c")" "$prev")"
t_err "CHECK reports the owner" 999 'owned by 1000, the config says 1001'
ip -n "$C" addr flush dev ttap0
hrun tap CHECK "$contns" ttap0 c1 <<<"$(with_prev "$c" "$prev")"
t_err "CHECK reports the missing address" 999 'Failed to match addr 10.200.77.2/24'

hrun tap DEL "$contns" ttap0 c1 <<<"$c"
t_is "DEL exits 0, prints nothing" "$RC:$OUT" "0:"
t_is "DEL removed the tap and the allocation" "$(state "$C")" "$cbefore"
hrun tap DEL "$contns" ttap0 c1 <<<"$c"
t_is "DEL again succeeds" "$RC:$OUT" "0:"

# No IPAM, no owner: a bare tap, up, as a port of a bridge of the container.
if ip -n "$C" link add ttapbr0 type bridge 2>/dev/null; then
	l2='{"cniVersion":"1.0.0","name":"tapl2","type":"tap","bridge":"ttapbr0"}'
	hrun tap ADD "$contns" ttap1 l2 "IgnoreUnknown=1;MAC=02:7a:00:00:00:02" <<<"$l2"
	t_is "L2 ADD with a bridge" "$RC" 0
	t_json "  MAC from CNI_ARGS, no addresses" '"\(.interfaces[0].mac) \(.ips // [] | length)"' "02:7a:00:00:00:02 0"
	t_is "  port of ttapbr0" "$(ip -n "$C" -j link show ttap1 | jq -r '.[0].master')" ttapbr0
	t_is "  no owner" "$(sysfs ttap1 owner)" -1
	hrun tap DEL "$contns" ttap1 l2 <<<"$l2"; t_is "  DEL" "$RC" 0
	t_nok "  tap gone" ip -n "$C" link show ttap1
	ip -n "$C" link del ttapbr0
else
	t_skip "tap as a bridge port" "kernel lacks bridge support"
fi

# Rollback: the route's gateway is unreachable.
hrun tap ADD "$contns" ttap0 rb <<<"$(conf '{"ipam":{"type":"host-local","dataDir":"'"$T_TMP/ipam"'","subnet":"10.200.78.0/24","routes":[{"dst":"10.200.79.0/24","gw":"10.200.70.1"}]}}')"
t_err "ADD failing at the routes" 999 'failed to add route 10.200.79.0/24'
t_is "failed ADD left the container unchanged" "$(state "$C")" "$cbefore"

# An existing interface of that name is never touched.
ip -n "$C" link add ttap0 type veth peer name ttapx
hrun tap ADD "$contns" ttap0 dup <<<"$(conf)"
t_err "ADD onto an existing ifname" 999 'failed to create tap ttap0'
t_like "  the veth is still there" "$(ip -n "$C" -d link show ttap0)" 'veth'
t_is "  no allocation kept" "$(state "$C" | tail -1)" 0
ip -n "$C" link del ttap0

gone=$(t_netns tapgone)
hrun tap ADD "$gone" ttap0 g1 <<<"$(conf)"; t_is "ADD in a namespace to delete" "$RC" 0
ip netns del "${gone##*/}"
hrun tap DEL "$gone" ttap0 g1 <<<"$(conf)"
t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
t_is "  released the allocation" "$(state "$C" | tail -1)" 0
t_is "nothing of ours left in the container" "$(state "$C")" "$cbefore"
t_is "nothing of ours left in the host" "$(state "$H")" "$hbefore"
t_done
