#!/usr/bin/env bash
# vlan: the applet runs inside a test namespace acting as the host
# (`ip netns exec`), whose veth end tmv0 is the master. Config errors and
# DEL are tested on every kernel; ADD/CHECK of a live VLAN only where the
# kernel has 802.1Q, and elsewhere ADD must fail naming the missing support
# with nothing changed.
. "$CNI_TESTS/lib.sh"
export CNI_PATH="$T_BIN:/usr/lib/cni"

hostns=$(t_netns vlhost); H=${hostns##*/}
contns=$(t_netns vlcont); C=${contns##*/}
ip -n "$H" link add tmv0 type veth peer name tmv0p
ip -n "$H" link set tmv0 up; ip -n "$H" link set tmv0p up

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
ipam='"ipam":{"type":"host-local","dataDir":"'"$T_TMP/ipam"'","subnet":"10.200.75.0/24"},
	"dns":{"nameservers":["10.200.75.53"]}'
conf() { jq -c ". + ${1:-{\}}" <<<"{\"cniVersion\":\"1.1.0\",\"name\":\"vlnet\",\"type\":\"vlan\",\"master\":\"tmv0\",\"vlanId\":75,$ipam}"; }
with_prev() { jq -c --argjson p "$2" '. + {prevResult: $p}' <<<"$1"; }
hbefore=$(state "$H"); cbefore=$(state "$C")

bad() { # DESC REGEX CONF [CMD]
	hrun vlan "${4:-ADD}" "$contns" tmveth0 c-bad <<<"$3"
	t_err "$1" 7 "$2"
}
bad "master is required" '^master: missing' "$(conf | jq -c 'del(.master)')"
bad "master empty" '^master: must not be empty' "$(conf '{"master":""}')"
bad "master that does not exist" '^master: link "tmvnone" not found' "$(conf '{"master":"tmvnone"}')"
bad "vlanId is required" '^vlanId: missing' "$(conf | jq -c 'del(.vlanId)')"
bad "vlanId 0" '^vlanId' "$(conf '{"vlanId":0}')"
bad "vlanId 4095" '^vlanId' "$(conf '{"vlanId":4095}')"
bad "vlanId not a number" '^vlanId: expected' "$(conf '{"vlanId":"5"}')"
bad "negative mtu" '^mtu' "$(conf '{"mtu":-1}')"
bad "mtu above the master's" '^mtu: invalid MTU 9000, must be \[0, master MTU\(1500\)\]' "$(conf '{"mtu":9000}')"
bad "ipam is required" '^ipam: missing' "$(conf | jq -c 'del(.ipam)')"
bad "ipam is required for DEL too" '^ipam: missing' "$(conf | jq -c 'del(.ipam)')" DEL
bad "ipam.type is required" '^ipam.type: missing' "$(conf '{"ipam":{}}')"
t_is "bad configs left the host unchanged" "$(state "$H")" "$hbefore"
t_is "bad configs left the container unchanged" "$(state "$C")" "$cbefore"

if ip -n "$H" link add tmvprobe link tmv0 type vlan id 4000 2>/dev/null; then
	ip -n "$H" link del tmvprobe
	have=1
else
	have=0
fi

if [ "$have" = 0 ]; then
	hrun vlan ADD "$contns" tmveth0 c1 <<<"$(conf)"
	t_err "ADD names the missing kernel support" 999 'kernel lacks vlan support.*CONFIG_VLAN_8021Q'
	t_is "  nothing allocated or created in the container" "$(state "$C")" "$cbefore"
	t_is "  host unchanged" "$(state "$H")" "$hbefore"
	t_skip "vlan ADD/CHECK/DEL of a live link" "kernel lacks 802.1Q VLAN support (CONFIG_VLAN_8021Q)"
else
	c=$(conf '{"mtu":1400}')
	hrun vlan ADD "$contns" tmveth0 c1 <<<"$c"
	t_is "ADD exits 0" "$RC" 0
	t_json "interface" '.interfaces[0] | "\(.name) \(.sandbox)"' "tmveth0 $contns"
	t_json "address" '[.ips[] | "\(.address) \(.interface)"] | join(",")' "10.200.75.2/24 0"
	t_json "dns is the config's" '.dns.nameservers[0]' 10.200.75.53
	prev=$OUT
	d=$(ip -n "$C" -d -j link show tmveth0)
	t_is "vlan 75 with mtu 1400" "$(jq -r '.[0] | "\(.linkinfo.info_kind) \(.linkinfo.info_data.id) \(.mtu)"' <<<"$d")" "vlan 75 1400"
	t_like "address applied" "$(ip -n "$C" -br addr show tmveth0)" '10.200.75.2/24'
	hrun vlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$c" "$prev")"
	t_is "CHECK passes" "$RC:$OUT" "0:"
	hrun vlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$(conf '{"vlanId":76}')" "$prev")"
	t_err "CHECK reports the VLAN id" 999 'VLAN id 75, the config says 76'
	hrun vlan DEL "$contns" tmveth0 c1 <<<"$c"
	t_is "DEL" "$RC:$OUT" "0:"
	t_is "DEL removed the link and the allocation" "$(state "$C")" "$cbefore"
fi

hrun vlan DEL "$contns" tmveth0 c1 <<<"$(conf)"; t_is "DEL of what is not there" "$RC:$OUT" "0:"
hrun vlan DEL "$contns" tmveth0 c1 <<<"$(conf)"; t_is "DEL again" "$RC:$OUT" "0:"
fake='{"cniVersion":"1.1.0","interfaces":[{"name":"tmveth0","sandbox":"'"$contns"'"}],"ips":[]}'
hrun vlan CHECK "$contns" tmveth0 c1 <<<"$(with_prev "$(conf '{"ipam":{"type":"static"}}')" "$fake")"
t_err "CHECK of a missing link" 999 'interface tmveth0 in prevResult not found'
gone=$(t_netns vlgone); ip netns del "${gone##*/}"
hrun vlan DEL "$gone" tmveth0 g1 <<<"$(conf)"; t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
hrun vlan DEL "" tmveth0 g1 <<<"$(conf)"; t_is "DEL without CNI_NETNS" "$RC:$OUT" "0:"
hrun vlan STATUS "" "" "" <<<"$(conf)"; t_is "STATUS" "$RC:$OUT" "0:"
t_is "nothing of ours left in the container" "$(state "$C")" "$cbefore"
t_is "nothing of ours left in the host" "$(state "$H")" "$hbefore"
t_done
