#!/usr/bin/env bash
# macvlan: the applet runs inside a test namespace acting as the host
# (`ip netns exec`), whose veth end tmv0 is the master; the container is a
# second namespace. Nothing touches the real host.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns mv
lp_master 10.200.70.1/24 10.200.70.254
ip -n "$H" link add tmv1 mtu 1400 type veth peer name tmv1p
ip -n "$H" link set tmv1 up

lp_conf '{"cniVersion":"1.1.0","name":"mvnet","type":"macvlan",
	'"$(lp_ipam '"ranges":[[{"subnet":"10.200.70.0/24","rangeStart":"10.200.70.10"}],[{"subnet":"fd00:200:70::/64"}]],
	"routes":[{"dst":"0.0.0.0/0"},{"dst":"10.200.79.0/24","gw":"10.200.70.1"}]')"'}'
lp_snapshot

# Config errors: code 7 naming the field, nothing changed.
bad() { # DESC CODE REGEX PATCH [ARGS]
	hrun macvlan ADD "$contns" tmveth0 c-bad "${5-}" <<<"$(conf "$4")"
	t_err "$1" "$2" "$3"
}
bad "unknown mode" 7 '^mode: unknown macvlan mode "bogus"' '{"mode":"bogus"}'
bad "source mode is refused, as the reference" 7 'mode: .*source' '{"mode":"source"}'
bad "mode of the wrong type" 7 '^mode: expected string' '{"mode":4}'
bad "negative mtu" 7 '^mtu' '{"mtu":-1}'
bad "mtu not a number" 7 '^mtu: expected' '{"mtu":"1500"}'
bad "mtu above the master's" 7 'mtu: invalid MTU 9000, must be \[0, master MTU\(1500\)\]' '{"mtu":9000}'
bad "master of the wrong type" 7 '^master: expected string' '{"master":1}'
bad "master that does not exist" 7 '^master: link "tmvnone" not found' '{"master":"tmvnone"}'
bad "no master and no default route where it is looked up" 7 '^master: not set, and no default route' '{"linkInContainer":true}'
bad "master not a name" 7 '^master: not a valid' '{"master":"a/b"}'
bad "linkInContainer not a boolean" 7 '^linkInContainer' '{"linkInContainer":"yes"}'
bad "bad mac" 7 '^mac: invalid MAC address' '{"mac":"02:00:00:00:00"}'
bad "bad runtimeConfig.mac" 7 '^runtimeConfig.mac: invalid' '{"runtimeConfig":{"mac":"zz:00:00:00:00:01"}}'
bad "bad CNI_ARGS MAC" 7 '^CNI_ARGS MAC: invalid' '{}' 'MAC=02:00'
bad "unknown CNI_ARGS" 7 'CNI_ARGS: unknown args \[FOO\]' '{}' 'FOO=1'
bad "negative bcqueuelen" 7 '^bcqueuelen' '{"bcqueuelen":-1}'
bad "bcqueuelen not a number" 7 '^bcqueuelen: expected' '{"bcqueuelen":"100"}'
bad "ipam.type of the wrong type" 7 '^ipam.type: expected string' '{"ipam":{"type":3}}'
bad "dns not an object" 7 '^dns' '{"dns":[]}'
lp_unchanged "bad configs"

# ADD/CHECK/DEL/DEL in several result versions, master from the default
# route, dual-stack IPAM.
for v in 1.1.0 1.0.0 0.4.0; do
	# One network (so one IPAM store) per version: the same addresses.
	c=$(conf "{\"cniVersion\":\"$v\",\"name\":\"mv$v\",\"dns\":{\"nameservers\":[\"10.200.70.53\"]}}")
	lp_add macvlan tmveth0 "c-$v" "$c" "$v "
	t_json "$v result version" .cniVersion "$v"
	live_mac=$(ip -n "$C" -j link show tmveth0 | jq -r '.[0].address')
	t_json "$v interface" '.interfaces[0] | "\(.name) \(.mac) \(.sandbox)"' "tmveth0 $live_mac $contns"
	t_json "$v addresses" '[.ips[] | "\(.address) \(.gateway) \(.interface)"] | join(",")' \
		"10.200.70.10/24 10.200.70.1 0,fd00:200:70::2/64 fd00:200:70::1 0"
	t_json "$v routes" '[.routes[] | "\(.dst) \(.gw)"] | join(",")' \
		"0.0.0.0/0 null,10.200.79.0/24 10.200.70.1"
	t_json "$v dns is the config's" '.dns.nameservers[0]' 10.200.70.53
	d=$(ip -n "$C" -d -j link show tmveth0)
	t_is "$v macvlan in bridge mode" "$(jq -r '.[0].linkinfo | "\(.info_kind) \(.info_data.mode)"' <<<"$d")" "macvlan bridge"
	t_is "$v on the default route's interface" "$(jq -r '.[0].link_index' <<<"$d")" \
		"$(ip -n "$H" -j link show tmv0 | jq -r '.[0].ifindex')"
	t_like "$v link is up" "$(jq -r '.[0].flags|join(",")' <<<"$d")" 'UP'
	t_like "$v addresses applied" "$(ip -n "$C" -br addr show tmveth0)" '10.200.70.10/24 fd00:200:70::2/64'
	t_like "$v default route" "$(ip -n "$C" route show default)" 'default via 10.200.70.1 dev tmveth0'
	t_like "$v static route" "$(ip -n "$C" route show 10.200.79.0/24)" 'via 10.200.70.1 dev tmveth0'
	t_is "$v arp_notify on" "$(ip netns exec "$C" cat /proc/sys/net/ipv4/conf/tmveth0/arp_notify)" 1
	t_is "$v host unchanged by ADD" "$(state "$H" | head -n -1)" "$(head -n -1 <<<"$hbefore")"

	lp_check_ok macvlan tmveth0 "c-$v" "$c" "$v "
	ip -n "$C" route del 10.200.79.0/24
	lp_check_fails macvlan tmveth0 "c-$v" "$c" "$v CHECK reports a missing route" 'route 10.200.79.0/24 via 10.200.70.1 not found'
	ip -n "$C" addr del 10.200.70.10/24 dev tmveth0
	lp_check_fails macvlan tmveth0 "c-$v" "$c" "$v CHECK reports a missing address first" 'addr 10.200.70.10/24 on interface tmveth0'
	lp_check_fails macvlan tmveth0 "c-$v" "$(jq -c '. + {mode: "vepa"}' <<<"$c")" "$v CHECK reports the mode" 'mode bridge, the config says vepa'
	lp_check_fails macvlan tmveth1 "c-$v" "$(conf '{"ipam":{}}')" "$v CHECK of an interface not in prevResult" 'Sandbox in prevResult'
	hrun macvlan CHECK "$contns" tmveth0 "c-$v" <<<"$c"
	t_err "$v CHECK needs prevResult" 7 'prevResult'

	lp_del macvlan tmveth0 "c-$v" "$c" "$v "
done

# Layer 2 only (no ipam), named master, mode, mtu, MAC by priority.
l2() { jq -c ". + $1" <<<'{"cniVersion":"1.1.0","name":"mvl2","type":"macvlan","master":"tmv0"}'; }
hrun macvlan ADD "$contns" tmvnet1 l2a <<<"$(l2 '{"mode":"private","mtu":1280,"mac":"02:c0:00:00:00:01"}')"
t_is "L2 ADD exits 0" "$RC" 0
t_json "L2 result has no addresses" '.ips // [] | length' 0
t_json "L2 result MAC is the config's" '.interfaces[0].mac' 02:c0:00:00:00:01
d=$(ip -n "$C" -d -j link show tmvnet1)
t_is "L2 link: private, mtu, MAC, up" \
	"$(jq -r '.[0] | "\(.linkinfo.info_data.mode) \(.mtu) \(.address) \(.flags|index("UP") != null)"' <<<"$d")" \
	"private 1280 02:c0:00:00:00:01 true"
hrun macvlan DEL "$contns" tmvnet1 l2a <<<"$(l2 '{}')"; t_is "L2 DEL" "$RC" 0
hrun macvlan ADD "$contns" tmvnet1 l2b "IgnoreUnknown=1;MAC=02:c0:00:00:00:02;K8S_POD_NAME=x" <<<"$(l2 '{"mac":"02:c0:00:00:00:01"}')"
t_json "CNI_ARGS MAC beats the config's" '.interfaces[0].mac' 02:c0:00:00:00:02
hrun macvlan DEL "$contns" tmvnet1 l2b <<<"$(l2 '{}')"
hrun macvlan ADD "$contns" tmvnet1 l2c "MAC=02:c0:00:00:00:02" <<<"$(l2 '{"runtimeConfig":{"mac":"02:c0:00:00:00:03"}}')"
t_json "runtimeConfig.mac beats CNI_ARGS" '.interfaces[0].mac' 02:c0:00:00:00:03
hrun macvlan DEL "$contns" tmvnet1 l2c "FOO=bar" <<<"$(l2 '{}')"
t_is "DEL ignores CNI_ARGS it does not use" "$RC:$OUT" "0:"
hrun macvlan ADD "$contns" tmvnet1 l2d <<<"$(l2 '{"master":"tmv1","mtu":1400}')"
t_is "mtu equal to the master's is accepted" "$RC" 0
hrun macvlan DEL "$contns" tmvnet1 l2d <<<"$(l2 '{}')"
# bcqueuelen reaches the kernel (since Linux 5.11; before, a clear error).
hrun macvlan ADD "$contns" tmvnet1 l2e <<<"$(l2 '{"bcqueuelen":700}')"
if [ "$RC" = 0 ]; then
	t_is "bcqueuelen applied" \
		"$(ip -n "$C" -d -j link show tmvnet1 | jq -r '.[0].linkinfo.info_data.bcqueuelen')" 700
else
	t_err "bcqueuelen on a kernel without it" 999 'kernel lacks macvlan bcqueuelen support'
fi
hrun macvlan DEL "$contns" tmvnet1 l2e <<<"$(l2 '{}')"; t_is "bcqueuelen DEL" "$RC" 0

# linkInContainer: the master lives in the container namespace.
ip -n "$C" link add tmvc0 type veth peer name tmvc0p; ip -n "$C" link set tmvc0 up
cbefore2=$(state "$C")
hrun macvlan ADD "$contns" tmvnet2 lic <<<"$(l2 '{"master":"tmvc0","linkInContainer":true}')"
t_is "linkInContainer ADD" "$RC" 0
t_is "linkInContainer: parent is the container's tmvc0" \
	"$(ip -n "$C" -j -d link show tmvnet2 | jq -r '.[0].link')" tmvc0
hrun macvlan ADD "$contns" tmvnet3 lic2 <<<"$(l2 '{"master":"tmv0","linkInContainer":true}')"
t_err "linkInContainer looks the master up in the container" 7 'master: link "tmv0" not found in the container'
hrun macvlan DEL "$contns" tmvnet2 lic <<<"$(l2 '{"master":"tmvc0","linkInContainer":true}')"
t_is "linkInContainer DEL" "$(state "$C")" "$cbefore2"
ip -n "$C" link del tmvc0

# A failed ADD rolls back: the route's gateway is unreachable, so the link
# and the allocation made before it must go.
lp_add_rollback macvlan tmveth0 10.200.71.0/24 10.200.72.0/24 10.200.73.1
t_is "failed ADD left the host unchanged" "$(state "$H")" "$hbefore"

# An existing interface of that name is never touched.
lp_add_existing macvlan tmveth0 tmvx 'File exists'
ip -n "$C" link del tmveth0

# DEL with the namespace gone still releases the allocation.
lp_del_gone macvlan tmveth0 mvgone added

# GC goes to the IPAM plugin: an attachment not listed loses its address.
hrun macvlan ADD "$contns" tmveth0 gc1 <<<"$(conf)"; t_is "ADD before GC" "$RC" 0
hrun macvlan GC "" "" "" <<<"$(conf '{"cni.dev/valid-attachments":[]}')"
t_is "GC" "$RC:$OUT" "0:"
t_is "  released the allocation of the stale attachment" "$(state "$C" | tail -1)" 0
hrun macvlan DEL "$contns" tmveth0 gc1 <<<"$(conf)"; t_is "  DEL after GC" "$RC" 0
lp_finish macvlan tmveth0
t_done
