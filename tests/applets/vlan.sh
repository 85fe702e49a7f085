#!/usr/bin/env bash
# vlan: the applet runs inside a test namespace acting as the host
# (`ip netns exec`), whose veth end tmv0 is the master. Config errors and
# DEL are tested on every kernel; ADD/CHECK of a live VLAN (ids 75 and 0)
# only where the kernel has 802.1Q, and elsewhere ADD (also of vlanId 0,
# which the config checks accept) must fail naming the missing support with
# nothing changed.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns vl
lp_master
lp_conf '{"cniVersion":"1.1.0","name":"vlnet","type":"vlan","master":"tmv0","vlanId":75,
	'"$(lp_ipam '"subnet":"10.200.75.0/24"')"',"dns":{"nameservers":["10.200.75.53"]}}'
lp_snapshot

bad() { # DESC REGEX CONF [CMD]
	hrun vlan "${4:-ADD}" "$contns" tmveth0 c-bad <<<"$3"
	t_err "$1" 7 "$2"
}
bad "master is required" '^master: missing' "$(conf | jq -c 'del(.master)')"
bad "master empty" '^master: must not be empty' "$(conf '{"master":""}')"
bad "master that does not exist" '^master: link "tmvnone" not found' "$(conf '{"master":"tmvnone"}')"
bad "vlanId is required" '^vlanId: missing' "$(conf | jq -c 'del(.vlanId)')"
bad "vlanId 4095 (reserved)" '^vlanId: 4095 out of range \[0, 4094\]' "$(conf '{"vlanId":4095}')"
bad "vlanId -1" '^vlanId: -1 out of range \[0, 4094\]' "$(conf '{"vlanId":-1}')"
bad "vlanId not a number" '^vlanId: expected' "$(conf '{"vlanId":"5"}')"
bad "negative mtu" '^mtu' "$(conf '{"mtu":-1}')"
bad "mtu above the master's" '^mtu: invalid MTU 9000, must be \[0, master MTU\(1500\)\]' "$(conf '{"mtu":9000}')"
bad "ipam is required" '^ipam: missing' "$(conf | jq -c 'del(.ipam)')"
bad "ipam is required for DEL too" '^ipam: missing' "$(conf | jq -c 'del(.ipam)')" DEL
bad "ipam.type is required" '^ipam.type: missing' "$(conf '{"ipam":{}}')"
lp_unchanged "bad configs"

if ! lp_kernel_has link tmv0 type vlan id 4000; then
	lp_add_unsupported vlan tmveth0 'kernel lacks vlan support.*CONFIG_VLAN_8021Q'
	# vlanId 0 (priority tagging) passes the config checks, as in the
	# reference: the ADD gets as far as the kernel.
	hrun vlan ADD "$contns" tmveth0 c0 <<<"$(conf '{"vlanId":0}')"
	t_err "vlanId 0 is accepted (ADD reaches the kernel)" 999 'kernel lacks vlan support'
	lp_unchanged "ADD of vlanId 0"
	t_skip "vlan ADD/CHECK/DEL of a live link" "kernel lacks 802.1Q VLAN support (CONFIG_VLAN_8021Q)"
else
	c=$(conf '{"mtu":1400}')
	lp_add_one vlan tmveth0 c1 "$c" 10.200.75.2/24
	t_json "dns is the config's" '.dns.nameservers[0]' 10.200.75.53
	d=$(ip -n "$C" -d -j link show tmveth0)
	t_is "vlan 75 with mtu 1400" "$(jq -r '.[0] | "\(.linkinfo.info_kind) \(.linkinfo.info_data.id) \(.mtu)"' <<<"$d")" "vlan 75 1400"
	lp_check_ok vlan tmveth0 c1 "$c"
	lp_check_fails vlan tmveth0 c1 "$(conf '{"vlanId":76}')" "CHECK reports the VLAN id" 'VLAN id 75, the config says 76'
	lp_del vlan tmveth0 c1 "$c"
	# vlanId 0: priority-tagged frames, accepted as in the reference.
	c=$(conf '{"vlanId":0}')
	lp_add vlan tmveth0 c0 "$c" "vlanId 0: "
	t_is "vlan 0 created" "$(ip -n "$C" -d -j link show tmveth0 | jq -r '.[0].linkinfo | "\(.info_kind) \(.info_data.id)"')" "vlan 0"
	lp_check_ok vlan tmveth0 c0 "$c" "vlanId 0: "
	lp_del vlan tmveth0 c0 "$c" "vlanId 0: "
fi

lp_check_missing vlan tmveth0 '{"ipam":{"type":"static"}}'
lp_del_gone vlan tmveth0 vlgone
lp_finish vlan tmveth0
t_done
