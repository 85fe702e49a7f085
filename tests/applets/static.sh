#!/usr/bin/env bash
# static: result shape in every version, the address sources and their
# priority (runtimeConfig.ips > args.cni.ips > CNI_ARGS IP=/GATEWAY= added
# to ipam.addresses), CHECK against prevResult, malformed configs, and the
# same results as the reference binary.
. "$CNI_TESTS/lib.sh"

ns=$(t_netns st)
REF=/usr/lib/cni/static

conf() {
	jq -nc --arg v "$1" --argjson ipam "$2" --argjson extra "${3:-{\}}" \
		'{cniVersion: $v, name: "stnet", type: "bridge", ipam: ({type: "static"} + $ipam)} + $extra'
}

full='{"addresses":[{"address":"10.200.48.5/24","gateway":"10.200.48.1"},
	{"address":"fd00:200:40::5/64","gateway":"fd00:200:40::1"}],
	"routes":[{"dst":"0.0.0.0/0"},{"dst":"10.200.49.0/24","gw":"10.200.48.254"},{"dst":"::/0"}],
	"dns":{"nameservers":["10.200.48.53"],"domain":"example.test","search":["example.test"],"options":["ndots:1"]}}'

for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0; do
	c=$(conf "$v" "$full")
	cni_run static ADD "$ns" eth0 "v-$v" <<<"$c"
	t_is "$v ADD exits 0" "$RC" 0
	t_json "$v cniVersion" .cniVersion "$v"
	case $v in
	0.1.0|0.2.0)
		t_json "$v ip4" '.ip4.ip + " " + .ip4.gateway' "10.200.48.5/24 10.200.48.1"
		t_json "$v ip6" '.ip6.ip + " " + .ip6.gateway' "fd00:200:40::5/64 fd00:200:40::1" ;;
	*)
		t_json "$v addresses" '[.ips[] | .address + " " + .gateway] | join(",")' \
			"10.200.48.5/24 10.200.48.1,fd00:200:40::5/64 fd00:200:40::1"
		t_json "$v no interfaces" 'has("interfaces")' false
		t_json "$v routes" '[.routes[] | .dst + "via" + (.gw // "")] | join(",")' \
			"0.0.0.0/0via,10.200.49.0/24via10.200.48.254,::/0via" ;;
	esac
	t_json "$v dns" '[.dns.nameservers[0], .dns.domain, .dns.search[0], .dns.options[0]] | join(";")' \
		"10.200.48.53;example.test;example.test;ndots:1"
	case $v in 0.4.0|1.*)
		cni_run static CHECK "$ns" eth0 "v-$v" <<<"$(jq -c --argjson p "$OUT" '. + {prevResult: $p}' <<<"$c")"
		t_is "$v CHECK passes" "$RC:$OUT" "0:"
	esac
	cni_run static DEL "$ns" eth0 "v-$v" <<<"$c"
	t_is "$v DEL exits 0" "$RC:$OUT" "0:"
done

# Address sources.
base='{"addresses":[{"address":"10.200.48.5/24"}]}'
c=$(conf 1.0.0 "$base")
cni_run static ADD "$ns" eth0 a "IP=10.200.47.9/24,fd00:200:40::9/64;GATEWAY=10.200.47.1,fd00:200:40::1,10.200.48.1" <<<"$c"
t_json "CNI_ARGS IP= adds to the configured addresses, GATEWAY= by subnet" \
	'[.ips[] | .address + " " + (.gateway // "-")] | join(",")' \
	"10.200.48.5/24 10.200.48.1,10.200.47.9/24 10.200.47.1,fd00:200:40::9/64 fd00:200:40::1"
cni_run static ADD "$ns" eth0 a "IP= 10.200.47.9/24 , 10.200.46.9/24 " <<<"$(conf 1.0.0 '{}')"
t_json "CNI_ARGS IP= items are trimmed" '[.ips[].address] | join(",")' "10.200.47.9/24,10.200.46.9/24"
ca=$(jq -c '. + {args: {cni: {ips: ["10.200.46.7/24", "fd00:200:40::7/64"]}}}' <<<"$c")
cni_run static ADD "$ns" eth0 a "IP=10.200.47.9/24" <<<"$ca"
t_json "args.cni.ips replace the others" '[.ips[] | .address + " " + (.gateway // "-")] | join(",")' \
	"10.200.46.7/24 -,fd00:200:40::7/64 -"
cr=$(jq -c '. + {runtimeConfig: {ips: ["10.200.45.7/24"]}}' <<<"$ca")
cni_run static ADD "$ns" eth0 a "IP=10.200.47.9/24" <<<"$cr"
t_json "runtimeConfig.ips win over args" '[.ips[].address] | join(",")' "10.200.45.7/24"
cni_run static ADD "$ns" eth0 a <<<"$(conf 1.0.0 '{}')"
t_is "no address at all" "$RC:$(jq -c '.ips // []' <<<"$OUT")" "0:[]"
cni_run static ADD "$ns" eth0 a "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.200.47.9/24" <<<"$(conf 1.0.0 '{}')"
t_json "IgnoreUnknown" '.ips[0].address' "10.200.47.9/24"

# CHECK.
c=$(conf 1.0.0 "$full")
cni_run static CHECK "$ns" eth0 a <<<"$c"
t_err "CHECK without prevResult" 7 'prevResult'
prev='{"cniVersion":"1.0.0","ips":[{"address":"10.200.48.5/24","gateway":"10.200.48.9"},{"address":"fd00:200:40::5/64","gateway":"fd00:200:40::1"}]}'
cni_run static CHECK "$ns" eth0 a <<<"$(jq -c --argjson p "$prev" '. + {prevResult: $p}' <<<"$c")"
t_err "CHECK with another gateway" 999 '10\.200\.48\.5/24 has gateway 10\.200\.48\.9'
prev='{"cniVersion":"1.0.0","ips":[{"address":"10.200.48.5/24","gateway":"10.200.48.1"}]}'
cni_run static CHECK "$ns" eth0 a <<<"$(jq -c --argjson p "$prev" '. + {prevResult: $p}' <<<"$c")"
t_err "CHECK with an address missing" 999 'fd00:200:40::5/64 not found in prevResult'

# STATUS and GC have nothing to do.
c=$(conf 1.1.0 "$full")
OUT=$(CNI_COMMAND=STATUS "$T_BIN/static" <<<"$c" 2>/dev/null); RC=$?
t_is "STATUS" "$RC:$OUT" "0:"
OUT=$(CNI_COMMAND=GC CNI_PATH="$CNI_PATH" "$T_BIN/static" <<<"$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$c")" 2>/dev/null); RC=$?
t_is "GC" "$RC:$OUT" "0:"

# Malformed input.
bad() {
	local desc=$1 ipam=$2 code=$3 re=$4 args=${5-} extra=${6:-{\}}
	cni_run static ADD "$ns" eth0 bad "$args" <<<"$(conf 1.0.0 "$ipam" "$extra")"
	t_err "$desc" "$code" "$re"
}
bad "address without prefix" '{"addresses":[{"address":"10.200.48.5"}]}' 7 'ipam\.addresses\[0\]\.address: not a CIDR'
bad "address missing" '{"addresses":[{"gateway":"10.200.48.1"}]}' 7 'ipam\.addresses\[0\]\.address: missing'
bad "gateway not an address" '{"addresses":[{"address":"10.200.48.5/24","gateway":"x"}]}' 7 'ipam\.addresses\[0\]\.gateway: not an IP'
bad "gateway of the other family" '{"addresses":[{"address":"10.200.48.5/24","gateway":"fd00::1"}]}' 7 'ipam\.addresses\[0\]\.gateway: not of the address'
bad "addresses not a list" '{"addresses":{}}' 7 'ipam\.addresses: expected'
bad "route without dst" '{"routes":[{"gw":"10.200.48.1"}]}' 7 'ipam\.routes\[0\]\.dst: missing'
bad "dns of the wrong type" '{"dns":{"nameservers":"10.200.48.53"}}' 7 'ipam\.dns\.nameservers'
bad "CNI_ARGS IP without prefix" '{}' 4 'CNI_ARGS: IP: "10\.200\.48\.5" is not in CIDR' "IP=10.200.48.5"
bad "CNI_ARGS GATEWAY not an address" '{}' 4 'CNI_ARGS: GATEWAY' "IP=10.200.48.5/24;GATEWAY=nope"
bad "unknown CNI_ARGS" '{}' 7 'unknown args \[FOO\]' "FOO=1"
bad "args.cni.ips without prefix" '{}' 7 'args\.cni\.ips\[0\]: not a CIDR' "" '{"args":{"cni":{"ips":["10.200.48.5"]}}}'
bad "runtimeConfig.ips without prefix" '{}' 7 'runtimeConfig\.ips\[0\]: not a CIDR' "" '{"runtimeConfig":{"ips":["10.200.48.5"]}}'
cni_run static ADD "$ns" eth0 bad <<<'{"cniVersion":"1.0.0","name":"stnet","type":"bridge"}'
t_err "no ipam" 7 '^ipam: missing'
cni_run static ADD "$ns" eth0 bad <<<"$(conf 0.2.0 '{"addresses":[{"address":"10.200.48.5/24"},{"address":"10.200.47.5/24"}]}')"
t_err "two IPv4 addresses in 0.2.0" 1 'more than one address per family'

# Same results as the reference.
if [ -x "$REF" ]; then
	for v in 0.3.1 0.4.0 1.0.0; do
		c=$(conf "$v" "$full")
		for args in "" "IP=10.200.47.9/24;GATEWAY=10.200.47.1"; do
			cni_run static ADD "$ns" eth0 r "$args" <<<"$c"
			ours=$(jq -S . <<<"$OUT")
			theirs=$(env CNI_COMMAND=ADD CNI_CONTAINERID=r CNI_NETNS="$ns" CNI_IFNAME=eth0 CNI_ARGS="$args" \
				CNI_PATH=/usr/lib/cni "$REF" <<<"$c" 2>/dev/null | jq -S .)
			t_is "$v ${args:-no args}: same result as the reference" "$ours" "$theirs"
		done
	done
else
	t_skip "same results as the reference" "$REF not installed"
fi

t_done
