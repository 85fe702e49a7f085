#!/usr/bin/env bash
# tuning: sysctls and link attributes applied in a container namespace,
# restored on DEL, compared by CHECK; bad values refused with code 7 before
# anything changes; a kernel refusal half-way rolled back.
. "$CNI_TESTS/lib.sh"

ns=$(t_netns tn)
nsn=${ns##*/}
# The interface an interface plugin would have left: one end of a veth
# pair whose other end stays in the same test namespace.
ip -n "$nsn" link add ttn0 type veth peer name ttn1
ip -n "$nsn" link set ttn0 up
data="$T_TMP/tuning"

prev="{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"ttn0\",\"sandbox\":\"$ns\",\"mac\":\"00:00:00:00:00:00\"}],\"ips\":[{\"address\":\"10.200.80.2/24\",\"interface\":0}]}"
# conf JSON-FRAGMENT: a tuning config with prevResult and our data dir.
conf() {
	local extra=${1-}
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"tn\",\"type\":\"tuning\",\"dataDir\":\"$data\"${extra:+,$extra},\"prevResult\":$prev}"
}
link() { ip -n "$nsn" -j link show "${1:-ttn0}" | jq -r ".[0].$2"; }
flags() { ip -n "$nsn" -j link show "${1:-ttn0}" | jq -r '.[0].flags|join(",")'; }
sc() { ip netns exec "$nsn" cat "/proc/sys/${1//.//}"; }
# Everything tuning may change, as one string.
state() {
	echo "$(link ttn0 address) $(link ttn0 mtu) $(link ttn0 txqlen) $(flags ttn0)" \
		"$(sc net.core.somaxconn) $(sc net/ipv4/conf/ttn0/arp_filter)" \
		"$(ls "$data" 2>/dev/null | tr '\n' ' ')"
}

mac0=$(link ttn0 address)
mtu0=$(link ttn0 mtu)
qlen0=$(link ttn0 txqlen)
somax0=$(sc net.core.somaxconn)
clean=$(state)

all='"sysctl":{"net.core.somaxconn":"500","net.ipv4.conf.IFNAME.arp_filter":"1"},"mac":"c2:b0:57:49:47:f1","mtu":1400,"promisc":true,"allmulti":true,"txQLen":500'
cni_run tuning ADD "$ns" ttn0 c1 <<<"$(conf "$all")"
t_is "ADD exits 0" "$RC" 0
t_json "result carries the new MAC" '.interfaces[0].mac' c2:b0:57:49:47:f1
t_json "result keeps the addresses" '.ips[0].address' 10.200.80.2/24
t_is "MAC applied" "$(link ttn0 address)" c2:b0:57:49:47:f1
t_is "MTU applied" "$(link ttn0 mtu)" 1400
t_is "txqueuelen applied" "$(link ttn0 txqlen)" 500
t_like "promisc on" "$(flags ttn0)" PROMISC
t_like "allmulti on" "$(flags ttn0)" 'ALLMULTI'
t_is "global sysctl applied" "$(sc net.core.somaxconn)" 500
t_is "IFNAME sysctl applied" "$(sc net.ipv4.conf.ttn0.arp_filter)" 1
t_ok "backup saved under dataDir" test -f "$data/c1_ttn0.json"
t_is "backup holds the original MAC and MTU" \
	"$(jq -r '.mac + " " + (.mtu|tostring)' "$data/c1_ttn0.json")" "$mac0 $mtu0"

cni_run tuning CHECK "$ns" ttn0 c1 <<<"$(conf "$all")"
t_is "CHECK passes" "$RC:$OUT" "0:"
ip -n "$nsn" link set ttn0 mtu 1300
cni_run tuning CHECK "$ns" ttn0 c1 <<<"$(conf "$all")"
t_err "CHECK sees a changed MTU" 999 'MTU is 1300, configured 1400'
ip -n "$nsn" link set ttn0 mtu 1400
ip netns exec "$nsn" sysctl -qw net.core.somaxconn=501
cni_run tuning CHECK "$ns" ttn0 c1 <<<"$(conf "$all")"
t_err "CHECK sees a changed sysctl" 999 'somaxconn is 501, configured 500'
ip netns exec "$nsn" sysctl -qw net.core.somaxconn=500
ip -n "$nsn" link set ttn0 promisc off
cni_run tuning CHECK "$ns" ttn0 c1 <<<"$(conf "$all")"
t_err "CHECK sees promisc off" 999 'promiscuous mode is off'
ip -n "$nsn" link set ttn0 promisc on

cni_run tuning DEL "$ns" ttn0 c1 <<<"$(conf "$all")"
t_is "DEL exits 0" "$RC:$OUT" "0:"
t_is "DEL restores everything and removes the backup" "$(state)" "$clean"
cni_run tuning DEL "$ns" ttn0 c1 <<<"$(conf "$all")"
t_is "DEL again succeeds" "$RC:$OUT" "0:"

# DEL restores from the backup even when the config has a value ADD
# refuses: a rejected config must not block cleanup.
cni_run tuning ADD "$ns" ttn0 c1 <<<"$(conf '"mtu":1400')"
cni_run tuning DEL "$ns" ttn0 c1 <<<"$(conf '"mtu":-1,"sysctl":{"kernel.x":"1"}')"
t_is "DEL with a bad config still restores" "$RC:$(state)" "0:$clean"

# Every spec version: prevResult in that version, the MAC in the result
# where the version has interfaces.
for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0; do
	case $v in
	0.1.0|0.2.0) p='{"cniVersion":"'$v'","ip4":{"ip":"10.200.80.2/24"}}' ;;
	*) p='{"cniVersion":"'$v'","interfaces":[{"name":"ttn0","sandbox":"'$ns'"}],"ips":[{"address":"10.200.80.2/24","interface":0}]}' ;;
	esac
	c='{"cniVersion":"'$v'","name":"tn","type":"tuning","dataDir":"'$data'","mac":"c2:00:00:00:00:0a","prevResult":'$p'}'
	cni_run tuning ADD "$ns" ttn0 "v$v" <<<"$c"
	case $v in
	0.1.0|0.2.0) t_json "$v ADD passes the result through" .ip4.ip 10.200.80.2/24 ;;
	*) t_json "$v ADD reports the MAC" '.interfaces[0].mac' c2:00:00:00:00:0a ;;
	esac
	cni_run tuning DEL "$ns" ttn0 "v$v" <<<"$c"
	t_is "$v DEL restores" "$RC:$(link ttn0 address)" "0:$mac0"
done

# A sysctl someone else changed after ADD is left alone by DEL.
cni_run tuning ADD "$ns" ttn0 c2 <<<"$(conf '"sysctl":{"net.core.somaxconn":"500"}')"
t_is "ADD of a sysctl alone" "$RC" 0
ip netns exec "$nsn" sysctl -qw net.core.somaxconn=700
cni_run tuning DEL "$ns" ttn0 c2 <<<"$(conf '"sysctl":{"net.core.somaxconn":"500"}')"
t_is "DEL keeps a value changed since ADD" "$RC:$(sc net.core.somaxconn)" "0:700"
ip netns exec "$nsn" sysctl -qw "net.core.somaxconn=$somax0"

# Bad values: code 7 naming the field, and nothing changed.
bad() {
	local desc=$1 extra=$2 re=$3 args=${4-}
	cni_run tuning ADD "$ns" ttn0 cbad "$args" <<<"$(conf "$extra")"
	t_err "$desc" 7 "$re"
	t_is "$desc: nothing applied" "$(state)" "$clean"
}
bad "kernel.* sysctl" '"mac":"c2:b0:57:49:47:f1","sysctl":{"net.core.somaxconn":"9","kernel.hostname":"x"}' 'sysctl\.kernel\.hostname: not a net'
bad "sysctl with a slash" '"sysctl":{"net/core/somaxconn":"9"}' "'/' is not allowed"
bad "sysctl escaping net with .." '"sysctl":{"net..kernel.hostname":"9"}' 'empty component'
bad "sysctl outside net through IFNAME" '"sysctl":{"IFNAME.x":"1"}' 'not a net'
bad "non-string sysctl value" '"sysctl":{"net.core.somaxconn":9}' 'sysctl\.net\.core\.somaxconn: expected a string'
bad "sysctl key given twice" '"sysctl":{"net.core.somaxconn":"9","net.ipv4.ip_forward":"0","net.core.somaxconn":"10"}' '^sysctl: duplicated sysctl keys are not allowed'
cni_run tuning DEL "$ns" ttn0 cbad <<<"$(conf '"sysctl":{"net.core.somaxconn":"9","net.core.somaxconn":"10"}')"
t_is "DEL does not mind a sysctl key given twice" "$RC:$OUT" "0:"
bad "malformed MAC" '"mtu":1400,"mac":"c2:b0:57:49:47"' '^mac: malformed'
bad "multicast MAC" '"mac":"c3:b0:57:49:47:f1"' 'not a unicast'
bad "negative MTU" '"mtu":-1' '^mtu: '
bad "negative txQLen" '"txQLen":-5' '^txQLen: '
bad "malformed runtimeConfig.mac" '"runtimeConfig":{"mac":"zz"}' 'runtimeConfig\.mac: malformed'
bad "malformed args.cni.mac" '"args":{"cni":{"mac":"1:2"}}' 'args\.cni\.mac: malformed'
bad "malformed CNI_ARGS MAC" '' 'CNI_ARGS: MAC: malformed' 'IgnoreUnknown=1;MAC=nope'
bad "unknown CNI_ARGS" '' 'unknown args \[FOO\]' 'FOO=1'
bad "bad ifName" '"ifName":"a/b"' '^ifName: '

cni_run tuning ADD "$ns" ttn0 c3 <<<'{"cniVersion":"1.0.0","name":"tn","type":"tuning","mtu":1400}'
t_err "ADD without prevResult" 7 'prevResult'

# A kernel refusal half-way: what was applied before is put back.
cni_run tuning ADD "$ns" ttn0 c4 <<<"$(conf '"sysctl":{"net.core.somaxconn":"500"},"mac":"c2:b0:57:49:47:f1","mtu":99999')"
t_err "an MTU the kernel refuses fails ADD" 999 'MTU'
t_is "and the sysctl, MAC and backup are rolled back" "$(state)" "$clean"

# The MAC sources, later ones winning: config, CNI_ARGS, capability, args.
cni_run tuning ADD "$ns" ttn0 c5 'IgnoreUnknown=1;MAC=c2:00:00:00:00:02' <<<"$(conf '"mac":"c2:00:00:00:00:01"')"
t_is "CNI_ARGS MAC overrides the config" "$RC:$(link ttn0 address)" "0:c2:00:00:00:00:02"
cni_run tuning DEL "$ns" ttn0 c5 <<<"$(conf)"
cni_run tuning ADD "$ns" ttn0 c6 'MAC=c2:00:00:00:00:02' <<<"$(conf '"runtimeConfig":{"mac":"c2:00:00:00:00:03","mtu":1280}')"
t_is "capability mac overrides CNI_ARGS" "$RC:$(link ttn0 address)" "0:c2:00:00:00:00:03"
t_is "runtimeConfig.mtu applied" "$(link ttn0 mtu)" 1280
cni_run tuning DEL "$ns" ttn0 c6 <<<"$(conf)"
cni_run tuning ADD "$ns" ttn0 c7 <<<"$(conf '"runtimeConfig":{"mac":"c2:00:00:00:00:03"},"args":{"cni":{"mac":"c2:00:00:00:00:04","mtu":1300}}')"
t_is "args.cni overrides the capability" "$RC:$(link ttn0 address):$(link ttn0 mtu)" "0:c2:00:00:00:00:04:1300"
cni_run tuning DEL "$ns" ttn0 c7 <<<"$(conf)"
t_is "all restored after the MAC sources" "$(state)" "$clean"

# ifName: rename (with the link up), IFNAME then names the new name; DEL
# renames back.
ren='"ifName":"ttnr","sysctl":{"net.ipv4.conf.IFNAME.arp_filter":"1"},"mtu":1400'
cni_run tuning ADD "$ns" ttn0 c8 <<<"$(conf "$ren")"
t_is "ADD with ifName" "$RC" 0
t_json "result names the new name" '.interfaces[0].name' ttnr
t_is "link renamed and still up" "$(link ttnr ifname) $(flags ttnr | grep -o UP | head -1)" "ttnr UP"
t_is "IFNAME sysctl set on the new name" "$(sc net.ipv4.conf.ttnr.arp_filter)" 1
cni_run tuning CHECK "$ns" ttn0 c8 <<<"$(conf "$ren")"
t_is "CHECK of the renamed link" "$RC:$OUT" "0:"
cni_run tuning DEL "$ns" ttn0 c8 <<<"$(conf "$ren")"
t_is "DEL renames back and restores" "$RC:$(state)" "0:$clean"

# Allowlist: in a private mount namespace, an overlay over /etc gives us
# /etc/cni/tuning/allowlist.conf without touching the host's /etc.
mkdir -p "$T_TMP/up/cni/tuning" "$T_TMP/work"
printf '%s\n' '^net\.core\.[a-z_]*$' '  ^net\.ipv4\.conf\.IFNAME\.[a-z_]*$  ' >"$T_TMP/up/cni/tuning/allowlist.conf"
allow_run() {
	OUT=$(unshare -m --propagation private bash -c '
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1,workdir=$2" /etc || exit 99
		shift 2; exec env "$@"' _ "$T_TMP/up" "$T_TMP/work" \
		CNI_COMMAND=ADD CNI_NETNS="$ns" CNI_IFNAME=ttn0 CNI_CONTAINERID="$1" CNI_PATH="$CNI_PATH" \
		"$T_BIN/tuning" 2>/dev/null <<<"$2")
	RC=$?
}
allow_run c9 "$(conf '"sysctl":{"net.ipv4.ip_forward":"1"}')"
if [ "$RC" = 99 ]; then
	t_skip "allowlist refuses an unlisted sysctl" "no overlayfs for a private /etc"
else
	t_err "allowlist refuses an unlisted sysctl" 7 'not allowed by /etc/cni/tuning/allowlist.conf'
	allow_run c9 "$(conf '"sysctl":{"net.core.somaxconn":"600","net.ipv4.conf.IFNAME.arp_filter":"1"}')"
	t_is "allowlist admits listed sysctls" "$RC:$(sc net.core.somaxconn)" "0:600"
	cni_run tuning DEL "$ns" ttn0 c9 <<<"$(conf)"
	t_is "and DEL restores them" "$(state)" "$clean"
fi
t_nok "the host has no /etc/cni/tuning from us" test -e /etc/cni/tuning/allowlist.conf

# DEL when the namespace is gone: success, and the backup goes too.
ns2=$(t_netns tn2)
ip -n "${ns2##*/}" link add ttn0 type veth peer name ttn1
cni_run tuning ADD "$ns2" ttn0 c10 <<<"$(conf '"mtu":1400')"
t_is "ADD in a second namespace" "$RC" 0
ip netns del "${ns2##*/}"
cni_run tuning DEL "$ns2" ttn0 c10 <<<"$(conf '"mtu":1400')"
t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
t_nok "its backup is removed" test -e "$data/c10_ttn0.json"

t_done
