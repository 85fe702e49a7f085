#!/usr/bin/env bash
# host-device: a veth end thd0 in a test namespace acting as the host is
# moved into a container namespace and back. The applet runs in the test's
# host namespace (`ip netns exec`); nothing touches the real host.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/applets/linkplug-lib.sh"

lp_netns hd
ip -n "$H" link add thd0 type veth peer name thd0p
ip -n "$H" link set thd0 up
mac0=$(ip -n "$H" -j link show thd0 | jq -r '.[0].address')

alias_of() { ip -n "$1" -j -d link show "$2" | jq -r '.[0].ifalias // ""'; }
up() { ip -n "$1" -j link show "$2" | jq -e '.[0].flags | index("UP")' >/dev/null; }
lp_conf '{"cniVersion":"1.1.0","name":"hdnet","type":"host-device","device":"thd0",
	'"$(lp_ipam '"subnet":"10.200.74.0/24","routes":[{"dst":"10.200.75.0/24"}]')"'}'
lp_snapshot

bad() { # DESC REGEX PATCH: code 7 before any change
	hrun host-device ADD "$contns" thdeth0 c-bad <<<"$(jq -c ". + $3" <<<'{"cniVersion":"1.1.0","name":"hdnet","type":"host-device"}')"
	t_err "$1" 7 "$2"
}
bad "no device named" 'specify either "device", "hwaddr", "kernelpath" or "pciBusID"' '{}'
bad "device of the wrong type" '^device: expected string' '{"device":1}'
bad "device not a name" '^device: not a valid interface name' '{"device":"../x"}'
bad "device that does not exist" '^device: link "thdnone" not found' '{"device":"thdnone"}'
bad "bad hwaddr" '^hwaddr: invalid MAC' '{"hwaddr":"00:11"}'
bad "hwaddr nobody has" '^hwaddr: no link with MAC 02:00:00:00:00:99' '{"hwaddr":"02:00:00:00:00:99"}'
bad "kernelpath outside /sys/devices" 'kernelpath: kernel device path "/etc" must be absolute' '{"kernelpath":"/etc"}'
bad "kernelpath with .." 'kernelpath: kernel device path' '{"kernelpath":"/sys/devices/../../etc"}'
bad "kernelpath without devices" '^kernelpath: failed to read network devices at /sys/devices/tnone/net' '{"kernelpath":"/sys/devices/tnone"}'
bad "pciBusID not a bus address" '^pciBusID: not a device address' '{"pciBusID":"../../x"}'
bad "pciBusID that does not exist" '^pciBusID: no driver for PCI device 0000:ff:1f.7' '{"pciBusID":"0000:ff:1f.7"}'
bad "deviceID that does not exist" '^runtimeConfig.deviceID: device 0000:ff:1f.7 not found' '{"runtimeConfig":{"deviceID":"0000:ff:1f.7"}}'
lp_unchanged "bad configs"

for v in 1.1.0 0.3.1; do
	c=$(conf "{\"cniVersion\":\"$v\",\"name\":\"hd$v\"}")
	lp_add host-device thdeth0 "c-$v" "$c" "$v "
	t_json "$v interface" '.interfaces[0] | "\(.name) \(.mac) \(.sandbox)"' "thdeth0 $mac0 $contns"
	t_json "$v address" '[.ips[] | "\(.address) \(.gateway) \(.interface)"] | join(",")' \
		"10.200.74.2/24 10.200.74.1 0"
	t_nok "$v thd0 left the host" ip -n "$H" link show thd0
	t_is "$v the device is thdeth0 in the container, same MAC" \
		"$(ip -n "$C" -j link show thdeth0 | jq -r '.[0].address')" "$mac0"
	t_is "$v its alias keeps the host name" "$(alias_of "$C" thdeth0)" thd0
	t_ok "$v it is up" up "$C" thdeth0
	t_like "$v address applied" "$(ip -n "$C" -br addr show thdeth0)" '10.200.74.2/24'
	t_like "$v route applied" "$(ip -n "$C" route show 10.200.75.0/24)" 'via 10.200.74.1 dev thdeth0'

	if [ "$v" = 0.3.1 ]; then
		hrun host-device CHECK "$contns" thdeth0 "c-$v" <<<"$(with_prev "$c" "$prev")"
		t_err "$v CHECK is refused before 0.4.0" 1 'CHECK'
	else
		lp_check_ok host-device thdeth0 "c-$v" "$c" "$v "
		ip -n "$C" addr del 10.200.74.2/24 dev thdeth0
		lp_check_fails host-device thdeth0 "c-$v" "$c" "$v CHECK reports the missing address" 'Failed to match addr 10.200.74.2/24'
		p2=$(jq -c '.interfaces[0].mac = "02:00:00:00:00:01"' <<<"$prev")
		hrun host-device CHECK "$contns" thdeth0 "c-$v" <<<"$(with_prev "$c" "$p2")"
		t_err "$v CHECK reports a changed MAC" 999 'MAC'
	fi

	lp_del host-device thdeth0 "c-$v" "$c" "$v "
	t_ok "$v thd0 is back in the host" ip -n "$H" link show thd0
	t_is "$v with its MAC" "$(ip -n "$H" -j link show thd0 | jq -r '.[0].address')" "$mac0"
	t_is "$v and no alias" "$(alias_of "$H" thd0)" ""
	t_nok "$v and down, as the reference leaves it" up "$H" thd0
	ip -n "$H" link set thd0 up
done
t_is "host as before" "$(state "$H")" "$hbefore"

# By hardware address, no IPAM: only the link, up.
hrun host-device ADD "$contns" thdnet1 hw <<<"{\"cniVersion\":\"1.0.0\",\"name\":\"hdnet\",\"type\":\"host-device\",\"hwaddr\":\"${mac0^^}\"}"
t_is "ADD by hwaddr" "$RC" 0
t_json "  result names thdnet1" '.interfaces[0].name + " " + (.ips // [] | length | tostring)' "thdnet1 0"
t_ok "  thdnet1 is up in the container" up "$C" thdnet1
hrun host-device DEL "$contns" thdnet1 hw <<<'{"cniVersion":"1.0.0","name":"hdnet","type":"host-device","hwaddr":"02:00:00:00:00:99"}'
t_is "DEL needs only the container's alias" "$RC:$OUT" "0:"
t_ok "  thd0 is back" ip -n "$H" link show thd0
ip -n "$H" link set thd0 up

# Rollback: the route's gateway is unreachable after the move.
lp_add_rollback host-device thdeth0 10.200.76.0/24 10.200.77.0/24 10.200.78.1
t_is "  thd0 back in the host, up, without alias" \
	"$(ip -n "$H" -j -d link show thd0 | jq -r '.[0] | "\(.ifname) \(.flags | index("UP") != null) \(.ifalias // "")"')" \
	"thd0 true "

# The container's ifname is taken: nothing moves.
lp_add_existing host-device thdeth0 thdx 'container already has an interface named thdeth0'
t_ok "  thd0 stays in the host" ip -n "$H" link show thd0
t_is "  thd0 has no alias" "$(alias_of "$H" thd0)" ""
# DEL refuses to move out what it did not move in (no alias).
hrun host-device DEL "$contns" thdeth0 dup <<<"$(conf '{"ipam":{}}')"
t_err "DEL of an interface without alias is refused" 999 'alias is not set'
ip -n "$C" link del thdeth0

# Interoperability with the reference plugin (same alias convention).
ref=/usr/lib/cni/host-device
if [ -x "$ref" ]; then
	rc='{"cniVersion":"0.4.0","name":"hdref","type":"host-device","device":"thd0"}'
	ip netns exec "$H" env CNI_COMMAND=ADD CNI_NETNS="$contns" CNI_IFNAME=thdeth0 \
		CNI_CONTAINERID=ref1 CNI_PATH="$CNI_PATH" "$ref" <<<"$rc" >/dev/null 2>&1
	t_is "reference ADD moved thd0 in" "$(alias_of "$C" thdeth0)" thd0
	hrun host-device DEL "$contns" thdeth0 ref1 <<<"$rc"
	t_is "our DEL undoes the reference's ADD" "$RC:$(ip -n "$H" -br link show thd0 | awk '{print $1}')" "0:thd0@thd0p"
	hrun host-device ADD "$contns" thdeth0 ref2 <<<"$rc"
	ip netns exec "$H" env CNI_COMMAND=DEL CNI_NETNS="$contns" CNI_IFNAME=thdeth0 \
		CNI_CONTAINERID=ref2 CNI_PATH="$CNI_PATH" "$ref" <<<"$rc" >/dev/null 2>&1
	t_is "the reference's DEL undoes our ADD" "$(ip -n "$H" -br link show thd0 | awk '{print $1}')" "thd0@thd0p"
	ip -n "$H" link set thd0 up
else
	t_skip "interoperability with the reference" "no $ref"
fi

t_skip "moving a device found by kernelpath, pciBusID or deviceID" \
	"needs a spare PCI network device; only the error paths are tested"

# DEL with the namespace gone: the kernel destroyed the (virtual) device,
# so the host keeps no thd0.
lp_del_gone host-device thdeth0 hdgone added
lp_finish host-device thdeth0 container
t_done
