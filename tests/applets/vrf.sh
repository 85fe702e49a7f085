#!/usr/bin/env bash
# vrf: config checks everywhere; on a kernel with VRF support, creating and
# joining a VRF, moving routes into its table, CHECK and DEL; on one
# without, the clear error, nothing created, and a visible SKIP for the
# rest.
. "$CNI_TESTS/lib.sh"

ns=$(t_netns vrf); nsn=${ns##*/}
ip -n "$nsn" link add tsbv0 type veth peer name tsbv1
ip -n "$nsn" addr add 10.200.86.2/24 dev tsbv0
ip -n "$nsn" addr add fd00:200:80::86:2/64 dev tsbv0 nodad
ip -n "$nsn" link set tsbv0 up
ip -n "$nsn" link set tsbv1 up
ip -n "$nsn" route add 10.200.87.0/24 via 10.200.86.1 dev tsbv0

prev="{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"tsbv0\",\"sandbox\":\"$ns\"}],\"ips\":[{\"address\":\"10.200.86.2/24\",\"interface\":0}]}"
conf() {
	local extra=${1-}
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"vrfnet\",\"type\":\"vrf\"${extra:+,$extra},\"prevResult\":$prev}"
}
links() { ip -n "$nsn" -br link | awk '{print $1}' | sort | tr '\n' ' '; }
master() { ip -n "$nsn" -j link show "$1" | jq -r '.[0].master // "none"'; }
before=$(links)

# Config errors: code 7 naming the field, on every kernel.
bad() {
	cni_run vrf ADD "$ns" tsbv0 c1 <<<"$(conf "$2")"
	t_err "$1" 7 "$3"
	t_is "$1: nothing created" "$(links)" "$before"
}
bad "vrfname missing" '' '^vrfname: missing'
bad "vrfname empty" '"vrfname":""' '^vrfname: '
bad "vrfname with a slash" '"vrfname":"a/b"' '^vrfname: .*contains /'
bad "vrfname too long" '"vrfname":"tsbvrf0123456789"' '^vrfname: .*longer than 15'
bad "vrfname not a string" '"vrfname":5' '^vrfname: '
bad "negative table" '"vrfname":"tsbvrf","table":-1' '^table: must not be negative'
bad "table too large" '"vrfname":"tsbvrf","table":4294967296' '^table: '
cni_run vrf ADD "$ns" tsbv0 c1 <<<'{"cniVersion":"1.0.0","name":"vrfnet","type":"vrf","vrfname":"tsbvrf"}'
t_err "ADD without prevResult" 7 'prevResult'
cni_run vrf DEL "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "DEL without a VRF succeeds" "$RC:$OUT" "0:"
cni_run vrf CHECK "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf"')"
t_err "CHECK without the VRF fails" 999 'VRF tsbvrf not found'
ip -n "$nsn" link add tsbvx type veth peer name tsbvy
cni_run vrf ADD "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvx"')"
t_err "a vrfname that names another kind of link" 999 'tsbvx exists and is not a VRF'
ip -n "$nsn" link del tsbvx
before=$(links)

if ! ip -n "$nsn" link add tsbvprobe type vrf table 4000 2>/dev/null; then
	cni_run vrf ADD "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf"')"
	t_err "ADD names the missing kernel support" 999 'kernel lacks vrf support.*CONFIG_NET_VRF'
	t_is "and creates nothing" "$(links) $(master tsbv0)" "$before none"
	t_skip "VRF create, join, routes, CHECK, DEL" "this kernel has no vrf link type (CONFIG_NET_VRF)"
	t_done
fi
ip -n "$nsn" link del tsbvprobe

cni_run vrf ADD "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf","table":1086')"
t_is "ADD exits 0" "$RC" 0
t_json "result is prevResult" '.interfaces[0].name + " " + .ips[0].address' "tsbv0 10.200.86.2/24"
t_is "VRF created with the table, up" \
	"$(ip -n "$nsn" -d -j link show tsbvrf | jq -r '.[0].linkinfo.info_data.table, (.[0].flags|index("UP") != null)' | tr '\n' ' ')" "1086 true "
t_is "interface enslaved" "$(master tsbv0)" tsbvrf
t_like "its route moved to the VRF's table" "$(ip -n "$nsn" route show table 1086)" '10.200.87.0/24 via 10.200.86.1 dev tsbv0'
t_like "global IPv6 address kept" "$(ip -n "$nsn" -6 addr show dev tsbv0)" 'fd00:200:80::86:2/64'
cni_run vrf CHECK "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf","table":1086')"
t_is "CHECK passes" "$RC:$OUT" "0:"

# A second interface joins the existing VRF; a different table is refused.
cni_run vrf ADD "$ns" tsbv1 c2 <<<"$(conf '"vrfname":"tsbvrf","table":1087')"
t_err "existing VRF with another table" 999 'different routing table'
cni_run vrf ADD "$ns" tsbv1 c2 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "second interface joins" "$RC:$(master tsbv1)" "0:tsbvrf"
cni_run vrf ADD "$ns" tsbv1 c3 <<<"$(conf '"vrfname":"tsbvrf2"')"
t_err "an interface already in a VRF" 999 'already a master set: tsbvrf'
t_is "and no second VRF is left behind" "$(ip -n "$nsn" -br link show type vrf | awk '{print $1}' | tr '\n' ' ')" "tsbvrf "

cni_run vrf DEL "$ns" tsbv0 c1 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "DEL of the first releases it, keeps the VRF" "$RC:$(master tsbv0):$(master tsbv1)" "0:none:tsbvrf"
cni_run vrf DEL "$ns" tsbv1 c2 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "DEL of the last removes the VRF" "$RC:$(links)" "0:$before"
cni_run vrf DEL "$ns" tsbv1 c2 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "DEL again succeeds" "$RC:$OUT" "0:"

# Without "table": the lowest table no VRF uses.
ip -n "$nsn" link add tsbvz type vrf table 1
cni_run vrf ADD "$ns" tsbv0 c4 <<<"$(conf '"vrfname":"tsbvrf"')"
t_is "free table picked" "$RC:$(ip -n "$nsn" -d -j link show tsbvrf | jq -r '.[0].linkinfo.info_data.table')" "0:2"
cni_run vrf DEL "$ns" tsbv0 c4 <<<"$(conf '"vrfname":"tsbvrf"')"
ip -n "$nsn" link del tsbvz
t_is "DEL" "$RC:$(links)" "0:$before"

t_done
