#!/usr/bin/env bash
# dummy: a dummy link in a container namespace carrying the IPAM address.
# The applet runs inside a test namespace acting as the host (`ip netns
# exec`). Config errors and DEL are tested on every kernel; ADD/CHECK of a
# live dummy only where the kernel has it, and elsewhere ADD must fail
# naming the missing support with nothing changed.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns dm
# host-local reports the DNS of its resolvConf.
printf 'nameserver 10.200.76.53\n' >"$T_TMP/resolv.conf"
lp_conf '{"cniVersion":"1.1.0","name":"dmnet","type":"dummy",
	'"$(lp_ipam '"subnet":"10.200.76.0/24","resolvConf":"'"$T_TMP/resolv.conf"'"')"'}'
lp_snapshot

hrun dummy ADD "$contns" tmvdm0 c-bad <<<'{"cniVersion":"1.1.0","name":"dmnet","type":"dummy"}'
t_err "ipam is required" 7 '^ipam: missing \(a dummy interface requires an IPAM configuration\)'
hrun dummy DEL "$contns" tmvdm0 c-bad <<<'{"cniVersion":"1.1.0","name":"dmnet","type":"dummy"}'
t_err "ipam is required for DEL too" 7 '^ipam: missing'
hrun dummy ADD "$contns" tmvdm0 c-bad <<<"$(conf '{"ipam":{"subnet":"10.200.76.0/24"}}')"
t_err "ipam.type is required" 7 '^ipam.type: missing'
hrun dummy ADD "$contns" tmvdm0 c-bad <<<"$(conf '{"ipam":{"type":"../x"}}')"
t_err "ipam.type must be a plugin name" 7 'ipam.type'
lp_unchanged "bad configs"

if ! lp_kernel_has type dummy; then
	lp_add_unsupported dummy tmvdm0 'kernel lacks dummy support.*CONFIG_DUMMY'
	t_skip "dummy ADD/CHECK/DEL of a live link" "kernel lacks dummy support (CONFIG_DUMMY)"
else
	c=$(conf)
	lp_add_one dummy tmvdm0 c1 "$c" 10.200.76.2/24
	t_json "dns is the IPAM plugin's, as the reference" '.dns.nameservers[0]' 10.200.76.53
	t_is "a dummy, up" "$(ip -n "$C" -d -j link show tmvdm0 | jq -r '.[0] | "\(.linkinfo.info_kind) \(.flags | index("UP") != null)"')" "dummy true"
	lp_check_ok dummy tmvdm0 c1 "$c"
	ip -n "$C" link set tmvdm0 down
	lp_check_fails dummy tmvdm0 c1 "$c" "CHECK reports the link down" 'tmvdm0 is down'
	lp_del dummy tmvdm0 c1 "$c"
fi

lp_del_gone dummy tmvdm0 dmgone
lp_finish dummy tmvdm0
t_done
