#!/usr/bin/env bash
# ipvlan: the applet runs inside a test namespace acting as the host
# (`ip netns exec`), whose veth end tmv0 is the master. Config errors and
# DEL are tested on every kernel; ADD/CHECK of a live ipvlan only where the
# kernel has ipvlan, and elsewhere ADD must fail naming the missing support
# with nothing changed.
. "$CNI_TESTS/lib.sh"
export CNI_PATH="$T_BIN:/usr/lib/cni"

hostns=$(t_netns ipvhost); H=${hostns##*/}
contns=$(t_netns ipvcont); C=${contns##*/}
ip -n "$H" link add tmv0 type veth peer name tmv0p
ip -n "$H" link set tmv0 up; ip -n "$H" link set tmv0p up
ip -n "$H" addr add 10.200.72.1/24 dev tmv0
ip -n "$H" route add default via 10.200.72.254 dev tmv0

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
ipam='"ipam":{"type":"host-local","dataDir":"'"$T_TMP/ipam"'","subnet":"10.200.72.0/24","rangeStart":"10.200.72.10"}'
conf() { jq -c ". + ${1:-{\}}" <<<"{\"cniVersion\":\"1.1.0\",\"name\":\"ipvnet\",\"type\":\"ipvlan\",$ipam}"; }
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
hbefore=$(state "$H"); cbefore=$(state "$C")

bad() { # DESC REGEX CONF
	hrun ipvlan ADD "$contns" tmveth0 c-bad <<<"$3"
	t_err "$1" 7 "$2"
}
bad "unknown mode" '^mode: unknown ipvlan mode "l4"' "$(conf '{"mode":"l4"}')"
bad "macvlan modes are not ipvlan modes" '^mode: unknown ipvlan mode "bridge"' "$(conf '{"mode":"bridge"}')"
bad "negative mtu" '^mtu' "$(conf '{"mtu":-1}')"
bad "master of the wrong type" '^master: expected string' "$(conf '{"master":[]}')"
bad "master that does not exist" '^master: link "tmvnone" not found' "$(conf '{"master":"tmvnone"}')"
bad "linkInContainer without master and no default route there" \
	'^master: not set, and no default route' "$(conf '{"linkInContainer":true}')"
bad "no ipam and nothing chained" '^ipam: missing' \
	'{"cniVersion":"1.0.0","name":"ipvnet","type":"ipvlan","master":"tmv0"}'
two='{"cniVersion":"1.0.0","interfaces":[{"name":"a"},{"name":"b"}],"ips":[{"address":"10.200.72.5/24"}]}'
bad "chained without master needs one interface in prevResult" \
	'^master: not set, and prevResult lacks a single named interface' \
	"$(with_prev '{"cniVersion":"1.0.0","name":"ipvnet","type":"ipvlan"}' "$two")"
t_is "bad configs left the host unchanged" "$(state "$H")" "$hbefore"
t_is "bad configs left the container unchanged" "$(state "$C")" "$cbefore"

# Does this kernel have ipvlan? Probe inside the test's host namespace.
if ip -n "$H" link add tmvprobe link tmv0 type ipvlan mode l2 2>/dev/null; then
	ip -n "$H" link del tmvprobe
	have=1
else
	have=0
fi

if [ "$have" = 0 ]; then
	hrun ipvlan ADD "$contns" tmveth0 c1 <<<"$(conf)"
	t_err "ADD names the missing kernel support" 999 'kernel lacks ipvlan support.*CONFIG_IPVLAN'
	t_is "  nothing allocated or created in the container" "$(state "$C")" "$cbefore"
	t_is "  host unchanged" "$(state "$H")" "$hbefore"
	hrun ipvlan ADD "$contns" tmveth0 c1 <<<"$(conf '{"linkInContainer":true,"master":"lo"}')"
	t_err "  also with linkInContainer" 999 'kernel lacks ipvlan support'
	t_skip "ipvlan ADD/CHECK/DEL of a live link" "kernel lacks ipvlan support (CONFIG_IPVLAN)"
else
	c=$(conf '{"mode":"l3"}')
	hrun ipvlan ADD "$contns" tmveth0 c1 <<<"$c"
	t_is "ADD exits 0" "$RC" 0
	t_json "interface" '.interfaces[0] | "\(.name) \(.sandbox)"' "tmveth0 $contns"
	t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "10.200.72.10/24 0"
	prev=$OUT
	d=$(ip -n "$C" -d -j link show tmveth0)
	t_is "ipvlan l3 on tmv0" "$(jq -r '.[0].linkinfo | "\(.info_kind) \(.info_data.mode)"' <<<"$d")" "ipvlan l3"
	t_like "address applied" "$(ip -n "$C" -br addr show tmveth0)" '10.200.72.10/24'
	hrun ipvlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$c" "$prev")"
	t_is "CHECK passes" "$RC:$OUT" "0:"
	hrun ipvlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$(conf '{"mode":"l2"}')" "$prev")"
	t_err "CHECK reports the mode" 999 'mode l3, the config says l2'
	hrun ipvlan DEL "$contns" tmveth0 c1 <<<"$c"
	t_is "DEL" "$RC:$OUT" "0:"
	t_is "DEL removed the link and the allocation" "$(state "$C")" "$cbefore"

	# Chained: master and addresses from prevResult.
	one='{"cniVersion":"1.0.0","interfaces":[{"name":"tmv0"}],"ips":[{"address":"10.200.72.99/24","interface":0}]}'
	ch=$(with_prev '{"cniVersion":"1.0.0","name":"ipvnet","type":"ipvlan"}' "$one")
	hrun ipvlan ADD "$contns" tmveth1 c2 <<<"$ch"
	t_is "chained ADD" "$RC" 0
	t_json "  uses prevResult's address" '.ips[0].address + " " + .interfaces[0].name' "10.200.72.99/24 tmveth1"
	hrun ipvlan DEL "$contns" tmveth1 c2 <<<"$ch"
	t_is "  DEL" "$RC:$(state "$C")" "0:$cbefore"
fi

# DEL and CHECK need no ipvlan support.
hrun ipvlan DEL "$contns" tmveth0 c1 <<<"$(conf)"; t_is "DEL of what is not there" "$RC:$OUT" "0:"
hrun ipvlan DEL "$contns" tmveth0 c1 <<<"$(conf)"; t_is "DEL again" "$RC:$OUT" "0:"
fake='{"cniVersion":"1.1.0","interfaces":[{"name":"tmveth0","sandbox":"'"$contns"'"}],"ips":[]}'
hrun ipvlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$(conf '{"ipam":{}}')" "$fake")"
t_err "CHECK of a missing link" 999 'interface tmveth0 in prevResult not found'
gone=$(t_netns ipvgone); ip netns del "${gone##*/}"
hrun ipvlan DEL "$gone" tmveth0 g1 <<<"$(conf)"; t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
hrun ipvlan DEL "" tmveth0 g1 <<<"$(conf)"; t_is "DEL without CNI_NETNS" "$RC:$OUT" "0:"
hrun ipvlan STATUS "" "" "" <<<"$(conf)"; t_is "STATUS" "$RC:$OUT" "0:"
t_is "nothing of ours left in the container" "$(state "$C")" "$cbefore"
t_is "nothing of ours left in the host" "$(state "$H")" "$hbefore"
t_done
