#!/usr/bin/env bash
# ipvlan: the applet runs inside a test namespace acting as the host
# (`ip netns exec`), whose veth end tmv0 is the master. Config errors and
# DEL are tested on every kernel; ADD/CHECK of a live ipvlan only where the
# kernel has ipvlan, and elsewhere ADD must fail naming the missing support
# with nothing changed.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns ipv
lp_master 10.200.72.1/24 10.200.72.254
lp_conf '{"cniVersion":"1.1.0","name":"ipvnet","type":"ipvlan",
	'"$(lp_ipam '"subnet":"10.200.72.0/24","rangeStart":"10.200.72.10"')"'}'
lp_snapshot

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
lp_unchanged "bad configs"

# Does this kernel have ipvlan? Probe inside the test's host namespace.
if ! lp_kernel_has link tmv0 type ipvlan mode l2; then
	lp_add_unsupported ipvlan tmveth0 'kernel lacks ipvlan support.*CONFIG_IPVLAN'
	hrun ipvlan ADD "$contns" tmveth0 c1 <<<"$(conf '{"linkInContainer":true,"master":"lo"}')"
	t_err "  also with linkInContainer" 999 'kernel lacks ipvlan support'
	t_skip "ipvlan ADD/CHECK/DEL of a live link" "kernel lacks ipvlan support (CONFIG_IPVLAN)"
else
	c=$(conf '{"mode":"l3"}')
	lp_add_one ipvlan tmveth0 c1 "$c" 10.200.72.10/24
	d=$(ip -n "$C" -d -j link show tmveth0)
	t_is "ipvlan l3 on tmv0" "$(jq -r '.[0].linkinfo | "\(.info_kind) \(.info_data.mode)"' <<<"$d")" "ipvlan l3"
	lp_check_ok ipvlan tmveth0 c1 "$c"
	lp_check_fails ipvlan tmveth0 c1 "$(conf '{"mode":"l2"}')" "CHECK reports the mode" 'mode l3, the config says l2'
	lp_del ipvlan tmveth0 c1 "$c"

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
lp_check_missing ipvlan tmveth0 '{"ipam":{}}'
lp_del_gone ipvlan tmveth0 ipvgone
lp_finish ipvlan tmveth0
t_done
