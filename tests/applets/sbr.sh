#!/usr/bin/env bash
# sbr: per-address routing tables and source rules in a container
# namespace, present after ADD, gone after DEL; the table, gateways and
# addSourceHints options; bad values refused with code 7; a failed ADD
# rolled back.
. "$CNI_TESTS/lib.sh"

ns=$(t_netns sb); nsn=${ns##*/}
peer=$(t_netns sbp); pn=${peer##*/}

# setup: the interface as an interface plugin leaves it, with addresses
# and main-table routes (a default route and one more).
setup() {
	ip -n "$nsn" link del tsb0 2>/dev/null
	ip -n "$nsn" link add tsb0 type veth peer name tsb1 netns "$pn"
	ip -n "$nsn" addr add 10.200.83.2/24 dev tsb0
	ip -n "$nsn" addr add fd00:200:80::2/64 dev tsb0 nodad
	ip -n "$nsn" link set tsb0 up
	ip -n "$pn" link set tsb1 up
	ip -n "$nsn" route add default via 10.200.83.1 dev tsb0
	ip -n "$nsn" route add 10.200.84.0/24 via 10.200.83.1 dev tsb0
	ip -n "$nsn" -6 route add default via fd00:200:80::1 dev tsb0
}
prev4="{\"address\":\"10.200.83.2/24\",\"gateway\":\"10.200.83.1\",\"interface\":0}"
prev6="{\"address\":\"fd00:200:80::2/64\",\"gateway\":\"fd00:200:80::1\",\"interface\":0}"
prev="{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"tsb0\",\"sandbox\":\"$ns\"}],\"ips\":[$prev4,$prev6]}"
conf() {
	local extra=${1-} p=${2-$prev}
	echo "{\"cniVersion\":\"1.0.0\",\"name\":\"sbnet\",\"type\":\"sbr\"${extra:+,$extra},\"prevResult\":$p}"
}
rules() { { ip -n "$nsn" -4 rule; ip -n "$nsn" -6 rule; } | grep -v 'lookup \(local\|main\|default\)' | sed 's/^[0-9]*:\s*//' | sort | tr '\n' ';'; }
table() { ip -n "$nsn" "${2:--4}" route show table "$1" 2>/dev/null | sed 's/ *$//' | tr '\n' ';'; }
main4() { table main -4; }
main6() { ip -n "$nsn" -6 route show table main dev tsb0 | grep -v '^fe80' | sed 's/ *$//' | tr '\n' ';'; }
# Every rule and every route of the namespace, as one string.
state() { echo "$(rules) | $(ip -n "$nsn" route show table all | grep -v '^local\|^broadcast\|^multicast\|^anycast' | sort | tr '\n' ';')"; }

setup
before=$(state)
cni_run sbr ADD "$ns" tsb0 c1 <<<"$(conf)"
t_is "ADD exits 0" "$RC" 0
t_json "result is prevResult" '[.ips[].address]|join(",")' "10.200.83.2/24,fd00:200:80::2/64"
t_is "one rule per address, tables from 100" "$(rules)" "from 10.200.83.2 lookup 100;from fd00:200:80::2 lookup 101;"
t_is "table 100: default, subnet and the other route" "$(table 100)" \
	"default via 10.200.83.1 dev tsb0;10.200.83.0/24 dev tsb0 proto kernel scope link src 10.200.83.2;10.200.84.0/24 via 10.200.83.1 dev tsb0;"
t_like "table 101: the IPv6 default and subnet" "$(table 101 -6)" \
	'fd00:200:80::/64 dev tsb0 proto kernel.*default via fd00:200:80::1 dev tsb0'
t_is "the interface's main-table routes moved out" "$(main4)|$(main6)" "|"
t_like "the source rule routes: lookup from the address uses table 100" \
	"$(ip -n "$nsn" route get 10.200.99.9 from 10.200.83.2)" 'via 10.200.83.1 dev tsb0 table 100'
cni_run sbr CHECK "$ns" tsb0 c1 <<<"$(conf)"
t_is "CHECK passes" "$RC:$OUT" "0:"

cni_run sbr DEL "$ns" tsb0 c1 <<<"$(conf)"
t_is "DEL exits 0" "$RC:$OUT" "0:"
t_is "rules gone after DEL" "$(rules)" ""
t_is "tables 100 and 101 empty after DEL" "$(table 100)|$(table 101 -6)" "|"
cni_run sbr DEL "$ns" tsb0 c1 <<<"$(conf)"
t_is "DEL again succeeds" "$RC:$OUT" "0:"
cni_run sbr CHECK "$ns" tsb0 c1 <<<"$(conf)"
t_err "CHECK fails once the rules are gone" 999 'no source routing rule for 10.200.83.2'

# A table already used (by a rule, or only by routes) is skipped.
setup
ip -n "$nsn" rule add from 10.200.88.1 table 100
ip -n "$nsn" route add 10.200.89.0/24 dev tsb0 table 101
cni_run sbr ADD "$ns" tsb0 c2 <<<"$(conf '' "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"tsb0\",\"sandbox\":\"$ns\"}],\"ips\":[$prev4]}")"
t_is "first free table is 102" "$RC:$(rules)" "0:from 10.200.83.2 lookup 102;from 10.200.88.1 lookup 100;"
cni_run sbr DEL "$ns" tsb0 c2 <<<"$(conf)"
t_is "DEL leaves the other rule and table alone" "$(rules)|$(table 101)" "from 10.200.88.1 lookup 100;|10.200.89.0/24 dev tsb0 scope link;"
ip -n "$nsn" rule del from 10.200.88.1 table 100
ip -n "$nsn" route del 10.200.89.0/24 dev tsb0 table 101

# table: only rules, towards it; routes untouched.
setup
before=$(state)
cni_run sbr ADD "$ns" tsb0 c3 <<<"$(conf '"table":300')"
t_is "table option: rules towards 300" "$RC:$(rules)" "0:from 10.200.83.2 lookup 300;from fd00:200:80::2 lookup 300;"
t_like "table option: main routes untouched" "$(main4)" 'default via 10.200.83.1 dev tsb0;10.200.83.0/24.*10.200.84.0/24 via'
cni_run sbr CHECK "$ns" tsb0 c3 <<<"$(conf '"table":300')"
t_is "table option: CHECK" "$RC:$OUT" "0:"
cni_run sbr DEL "$ns" tsb0 c3 <<<"$(conf '"table":300')"
t_is "table option: DEL restores the namespace" "$RC:$(state)" "0:$before"

# gateways: a static gateway per family instead of prevResult's.
setup
cni_run sbr ADD "$ns" tsb0 c4 <<<"$(conf '"gateways":["10.200.83.254","fd00:200:80::fe"]')"
t_is "static gateways ADD" "$RC" 0
t_like "IPv4 table uses the static gateway" "$(table 100)" '^default via 10.200.83.254 dev tsb0;'
t_like "IPv6 table uses the static gateway" "$(table 101 -6)" 'default via fd00:200:80::fe dev tsb0'
cni_run sbr DEL "$ns" tsb0 c4 <<<"$(conf '"gateways":["10.200.83.254","fd00:200:80::fe"]')"
t_is "static gateways DEL" "$RC:$(rules)" "0:"

# addSourceHints: subnet routes stay in main with the address as source.
setup
cni_run sbr ADD "$ns" tsb0 c5 <<<"$(conf '"addSourceHints":true')"
t_is "source hints ADD" "$RC" 0
t_is "main keeps the subnet route, with a source, and no default" "$(main4)" \
	"10.200.83.0/24 dev tsb0 scope link src 10.200.83.2;"
t_like "per-address table still complete" "$(table 100)" '^default via 10.200.83.1 dev tsb0;10.200.83.0/24'
cni_run sbr DEL "$ns" tsb0 c5 <<<"$(conf '"addSourceHints":true')"
t_is "source hints DEL" "$RC:$(rules)" "0:"

# Bad values: code 7 naming the field, nothing changed.
setup
before=$(state)
bad() {
	cni_run sbr ADD "$ns" tsb0 cbad <<<"$(conf "$2" "${4-$prev}")"
	t_err "$1" 7 "$3"
	t_is "$1: nothing applied" "$(state)" "$before"
}
bad "three gateways" '"gateways":["10.200.83.1","10.200.83.2","fd00:200:80::1"]' '^gateways: at most 2'
bad "two IPv4 gateways" '"gateways":["10.200.83.1","10.200.83.3"]' '^gateways\[1\]: a second IPv4'
bad "malformed gateway" '"gateways":["10.200.83.300"]' '^gateways\[0\]'
bad "table 0" '"table":0' '^table: '
bad "negative table" '"table":-3' '^table: '
bad "string addSourceHints" '"addSourceHints":"yes"' '^addSourceHints: '
bad "no addresses in prevResult" '' 'no IP addresses' "{\"cniVersion\":\"1.0.0\",\"interfaces\":[{\"name\":\"tsb0\"}],\"ips\":[]}"
cni_run sbr ADD "$ns" tsb0 c6 <<<'{"cniVersion":"1.0.0","name":"sbnet","type":"sbr"}'
t_err "ADD without prevResult" 7 'prevResult'

# A gateway the kernel cannot reach fails ADD half-way: rolled back.
cni_run sbr ADD "$ns" tsb0 c7 <<<"$(conf '"gateways":["10.200.85.1"]')"
t_err "an unreachable gateway fails ADD" 999 'default|10.200.85.1'
t_is "and the rules and routes are as before" "$(state)" "$before"

# DEL with a gateway ADD would refuse still removes the rules.
cni_run sbr ADD "$ns" tsb0 c9 <<<"$(conf '"table":300')"
cni_run sbr DEL "$ns" tsb0 c9 <<<"$(conf '"table":300,"gateways":["nope"]')"
t_is "DEL with a bad gateway still removes the rules" "$RC:$(rules)" "0:"

# DEL when the interface or the namespace is gone.
cni_run sbr ADD "$ns" tsb0 c8 <<<"$(conf)"
ip -n "$nsn" link del tsb0
cni_run sbr DEL "$ns" tsb0 c8 <<<"$(conf)"
t_is "DEL with the interface gone" "$RC:$OUT" "0:"
t_is "removes the rules of prevResult's addresses" "$(rules)" ""
ip netns add "cni-$T_TAG-gone"; gone=/run/netns/cni-$T_TAG-gone
ip netns del "cni-$T_TAG-gone"
cni_run sbr DEL "$gone" tsb0 c8 <<<"$(conf)"
t_is "DEL with the namespace gone" "$RC:$OUT" "0:"

t_done
