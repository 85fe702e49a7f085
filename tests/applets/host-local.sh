#!/usr/bin/env bash
# host-local: results in every version, the reference's on-disk layout both
# ways, round-robin, requested addresses, exhaustion and STATUS, GC, 200
# ADDs from 16 parallel processes, and malformed configs (code 7 naming the
# field). Everything lives in the test's temp dir; the namespace only
# satisfies CNI_NETNS (host-local never enters it).
. "$CNI_TESTS/lib.sh"

ns=$(t_netns hl)
D="$T_TMP/data"
REF=/usr/lib/cni/host-local

# conf VERSION IPAM-JSON [TOP-LEVEL-EXTRA-JSON]: a network config.
conf() {
	jq -nc --arg v "$1" --argjson ipam "$2" --argjson extra "${3:-{\}}" \
		'{cniVersion: $v, name: "hlnet", type: "bridge", ipam: ({type: "host-local"} + $ipam)} + $extra'
}
# The files of a network's directory, sorted, space-separated.
files() { (cd "$D/$1" 2>/dev/null && ls -A | sort | tr '\n' ' ' | sed 's/ $//'); }

dual="{\"ranges\":[[{\"subnet\":\"10.200.40.0/24\"}],[{\"subnet\":\"fd00:200:40::/64\"}]],
	\"routes\":[{\"dst\":\"0.0.0.0/0\"},{\"dst\":\"10.200.49.0/24\",\"gw\":\"10.200.40.254\"}],
	\"dataDir\":\"$D\"}"

# Result shape in each version: ips with gateways, routes, dns, no
# interfaces, in the request's version.
for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0; do
	c=$(conf "$v" "$dual")
	cni_run host-local ADD "$ns" eth0 "v-$v" <<<"$c"
	t_is "$v ADD exits 0" "$RC" 0
	t_json "$v cniVersion" .cniVersion "$v"
	case $v in
	0.1.0|0.2.0)
		t_json "$v ip4" '.ip4.ip + " " + .ip4.gateway' "10.200.40.2/24 10.200.40.1"
		t_json "$v ip6" '.ip6.ip + " " + .ip6.gateway' "fd00:200:40::2/64 fd00:200:40::1"
		t_json "$v ip4 routes" '[.ip4.routes[] | .dst + "via" + (.gw // "")] | join(",")' \
			"0.0.0.0/0via,10.200.49.0/24via10.200.40.254" ;;
	*)
		t_json "$v addresses" '[.ips[] | .address + " " + .gateway] | join(",")' \
			"10.200.40.2/24 10.200.40.1,fd00:200:40::2/64 fd00:200:40::1"
		t_json "$v no interfaces" '[has("interfaces"), (.ips | map(has("interface")) | any)] | tostring' '[false,false]'
		t_json "$v routes" '[.routes[] | .dst + "via" + (.gw // "")] | join(",")' \
			"0.0.0.0/0via,10.200.49.0/24via10.200.40.254"
		t_json "$v dns present" 'has("dns")' true ;;
	esac
	case $v in 0.3.0|0.3.1|0.4.0) t_json "$v ips carry version" '[.ips[].version] | join(",")' "4,6" ;; esac
	if [ "$v" = 0.1.0 ]; then
		t_is "reservation file is the reference's bytes" "$(od -An -c "$D/hlnet/10.200.40.2" | tr -s ' ')" \
			" v - 0 . 1 . 0 \r \n e t h 0"
		t_is "cursor files hold the address" "$(cat "$D/hlnet/last_reserved_ip.0") $(cat "$D/hlnet/last_reserved_ip.1")" \
			"10.200.40.2 fd00:200:40::2"
		t_is "layout" "$(files hlnet)" "10.200.40.2 fd00:200:40::2 last_reserved_ip.0 last_reserved_ip.1 lock"
	fi
	case $v in 0.4.0|1.*)
		cni_run host-local CHECK "$ns" eth0 "v-$v" <<<"$(jq -c --argjson p "$OUT" '. + {prevResult: $p}' <<<"$c")"
		t_is "$v CHECK passes" "$RC:$OUT" "0:"
		cni_run host-local CHECK "$ns" eth1 "v-$v" <<<"$c"
		t_err "$v CHECK of another ifname fails" 999 "no address reserved for v-$v"
	esac
	cni_run host-local DEL "$ns" eth0 "v-$v" <<<"$c"
	t_is "$v DEL exits 0, prints nothing" "$RC:$OUT" "0:"
	cni_run host-local DEL "$ns" eth0 "v-$v" <<<"$c"
	t_is "$v DEL again" "$RC:$OUT" "0:"
	rm -rf "${D:?}/hlnet"
done

# DEL never creates the store; GC and STATUS on a missing store succeed.
c=$(conf 1.1.0 "$dual")
cni_run host-local DEL "$ns" eth0 nobody <<<"$c"
t_is "DEL on a missing store succeeds" "$RC:$OUT" "0:"
t_is "DEL created nothing" "$(ls -A "$D" 2>/dev/null)" ""
OUT=$(CNI_COMMAND=STATUS "$T_BIN/host-local" <<<"$c" 2>/dev/null); RC=$?
t_is "STATUS on a missing store succeeds" "$RC:$OUT" "0:"
OUT=$(CNI_COMMAND=GC CNI_PATH="$CNI_PATH" "$T_BIN/host-local" <<<"$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$c")" 2>/dev/null); RC=$?
t_is "GC on a missing store succeeds" "$RC:$OUT" "0:"
cni_run host-local CHECK "$ns" eth0 nobody <<<"$c"
t_err "CHECK on a missing store fails" 999 "no address reserved for nobody"

# Round-robin: a released address comes back only after the range wraps.
small="{\"ranges\":[[{\"subnet\":\"10.200.41.0/29\"}]],\"dataDir\":\"$D\"}"
c=$(conf 1.0.0 "$small")
got=""
for id in a b c; do cni_run host-local ADD "$ns" eth0 "rr-$id" <<<"$c"; got="$got $(jq -r '.ips[0].address' <<<"$OUT")"; done
cni_run host-local DEL "$ns" eth0 rr-b <<<"$c"
for id in d e f; do cni_run host-local ADD "$ns" eth0 "rr-$id" <<<"$c"; got="$got $(jq -r '.ips[0].address' <<<"$OUT")"; done
t_is "round-robin order" "$got" " 10.200.41.2/29 10.200.41.3/29 10.200.41.4/29 10.200.41.5/29 10.200.41.6/29 10.200.41.3/29"
cni_run host-local ADD "$ns" eth0 rr-g <<<"$c"
t_err "exhausted range" 999 'no IP addresses available in range set 0.*10\.200\.41\.1-10\.200\.41\.6'
OUT=$(CNI_COMMAND=STATUS "$T_BIN/host-local" <<<"$(conf 1.1.0 "$small")" 2>/dev/null); RC=$?
t_err "STATUS when the range is full: code 50" 50 'no IP addresses available in range set 0'
cni_run host-local ADD "$ns" eth0 rr-a <<<"$c"
t_err "second ADD of one attachment" 999 'already allocated to rr-a'
cni_run host-local DEL "$ns" eth0 rr-d <<<"$c"
OUT=$(CNI_COMMAND=STATUS "$T_BIN/host-local" <<<"$(conf 1.1.0 "$small")" 2>/dev/null); RC=$?
t_is "STATUS with one free address succeeds" "$RC:$OUT" "0:"
OUT=$(CNI_COMMAND=STATUS "$T_BIN/host-local" <<<"$(conf 1.0.0 "$small")" 2>/dev/null); RC=$?
t_err "STATUS needs cniVersion 1.1.0" 1 'STATUS'
for id in a c e f; do cni_run host-local DEL "$ns" eth0 "rr-$id" <<<"$c"; done
t_is "DEL of all leaves the bookkeeping" "$(files hlnet)" "last_reserved_ip.0 lock"
rm -rf "${D:?}/hlnet"

# Requested addresses: CNI_ARGS IP=, args.cni.ips, runtimeConfig.ips.
c=$(conf 1.0.0 "$dual")
cni_run host-local ADD "$ns" eth0 rq1 "IP=10.200.40.77" <<<"$c"
t_json "CNI_ARGS IP= is honoured" '[.ips[].address] | join(",")' "10.200.40.77/24,fd00:200:40::2/64"
cni_run host-local ADD "$ns" eth0 rq2 "IP=10.200.40.77/24" <<<"$c"
t_err "a taken address is refused" 999 'requested IP address 10.200.40.77 is not available'
t_is "the failed ADD released its v6 address" "$(ls "$D/hlnet" | grep -c fd00)" 1
cni_run host-local ADD "$ns" eth0 rq2 "IP=10.200.49.1" <<<"$c"
t_err "an address outside the ranges is refused" 999 'failed to allocate all requested IPs: 10.200.49.1'
cni_run host-local ADD "$ns" eth0 rq2 "IP=10.200.40.1" <<<"$c"
t_err "the gateway is refused" 999 'gateway'
cni_run host-local ADD "$ns" eth0 rq2 "K8S_POD_NAME=x;IP=10.200.40.78" <<<"$c"
t_err "unknown CNI_ARGS need IgnoreUnknown" 7 'unknown args \[K8S_POD_NAME\]'
cni_run host-local ADD "$ns" eth0 rq2 "IP=10.200.40.7x" <<<"$c"
t_err "a malformed CNI_ARGS IP is code 4" 4 'CNI_ARGS: IP'
ca=$(jq -c '. + {args: {cni: {ips: ["10.200.40.80/24", "fd00:200:40::80"]}}}' <<<"$c")
cni_run host-local ADD "$ns" eth0 rq2 "IgnoreUnknown=1;K8S_POD_NAME=x;IP=10.200.40.78" <<<"$ca"
t_json "args.cni.ips win over CNI_ARGS" '[.ips[].address] | join(",")' "10.200.40.80/24,fd00:200:40::80/64"
cr=$(jq -c '. + {runtimeConfig: {ips: ["fd00:200:40::90/64", "10.200.40.90"]}}' <<<"$c")
cni_run host-local ADD "$ns" eth0 rq3 <<<"$cr"
t_json "runtimeConfig.ips" '[.ips[].address] | join(",")' "10.200.40.90/24,fd00:200:40::90/64"
for id in rq1 rq2 rq3; do cni_run host-local DEL "$ns" eth0 "$id" <<<"$c"; done
t_is "requested addresses released" "$(files hlnet)" "last_reserved_ip.0 last_reserved_ip.1 lock"

# Legacy top-level subnet, ipRanges capability, resolvConf.
printf 'nameserver 10.200.40.53\nsearch a.example b.example\noptions ndots:2\ndomain example.test\n' >"$T_TMP/resolv.conf"
c=$(conf 1.0.0 "{\"subnet\":\"10.200.44.0/24\",\"rangeStart\":\"10.200.44.10\",\"gateway\":\"10.200.44.254\",
	\"resolvConf\":\"$T_TMP/resolv.conf\",\"dataDir\":\"$D\"}" \
	'{"runtimeConfig":{"ipRanges":[[{"subnet":"10.200.45.0/24","rangeStart":"10.200.45.50"}]]}}')
cni_run host-local ADD "$ns" eth0 leg <<<"$c"
t_json "ipRanges first, then the legacy subnet" '[.ips[] | .address + "/" + .gateway] | join(",")' \
	"10.200.45.50/24/10.200.45.1,10.200.44.10/24/10.200.44.254"
t_json "resolvConf parsed into dns" '[.dns.nameservers[0], .dns.domain, (.dns.search | join(" ")), .dns.options[0]] | join(";")' \
	"10.200.40.53;example.test;a.example b.example;ndots:2"
cni_run host-local DEL "$ns" eth0 leg <<<"$c"
cni_run host-local ADD "$ns" eth0 leg <<<"$(jq -c '.ipam.resolvConf = "/nonexistent/resolv.conf"' <<<"$c")"
t_err "a missing resolvConf" 5 'ipam.resolvConf'
rm -rf "${D:?}/hlnet"

# GC (spec 1.1): keeps exactly the valid attachments.
c=$(conf 1.1.0 "$small")
for a in "g1 eth0" "g1 eth1" "g2 eth0" "g3 eth0"; do set -- $a; cni_run host-local ADD "$ns" "$2" "$1" <<<"$c"; done
printf 'g3' >"$D/hlnet/10.200.41.6" # a reservation from before ifnames were recorded
gc=$(jq -c '. + {"cni.dev/valid-attachments": [{containerID: "g1", ifname: "eth0"}, {containerID: "g3", ifname: "eth9"}]}' <<<"$c")
OUT=$(CNI_COMMAND=GC CNI_PATH="$CNI_PATH" "$T_BIN/host-local" <<<"$gc" 2>/dev/null); RC=$?
t_is "GC exits 0" "$RC:$OUT" "0:"
t_is "GC kept the valid ones and the bookkeeping" "$(files hlnet)" "10.200.41.2 10.200.41.6 last_reserved_ip.0 lock"
OUT=$(CNI_COMMAND=GC CNI_PATH="$CNI_PATH" "$T_BIN/host-local" <<<"$(jq -c '. + {"cni.dev/valid-attachments": []}' <<<"$c")" 2>/dev/null); RC=$?
t_is "GC with no valid attachment empties the store" "$RC:$(files hlnet)" "0:last_reserved_ip.0 lock"
rm -rf "${D:?}/hlnet"

# 200 ADDs from 16 parallel processes on one range: 200 distinct addresses.
par="{\"ranges\":[[{\"subnet\":\"10.200.42.0/24\"}]],\"dataDir\":\"$D\"}"
c=$(conf 1.0.0 "$par")
mkdir -p "$T_TMP/par"
worker() {
	local w=$1 k
	for ((k = 0; k < 13; k++)); do
		[ $((w * 13 + k)) -ge 200 ] && break
		env CNI_COMMAND=ADD CNI_CONTAINERID="p-$w-$k" CNI_NETNS="$ns" CNI_IFNAME=eth0 \
			CNI_PATH="$CNI_PATH" "$T_BIN/host-local" <<<"$c" >"$T_TMP/par/$w-$k.out" 2>/dev/null
		echo "$?" >"$T_TMP/par/$w-$k.rc"
	done
}
pids=()
for ((w = 0; w < 16; w++)); do worker "$w" & pids+=($!); done
wait "${pids[@]}"
t_is "200 ADDs ran" "$(ls "$T_TMP"/par/*.rc | wc -l)" 200
t_is "every ADD exited 0" "$(cat "$T_TMP"/par/*.rc | sort -u | tr '\n' ' ')" "0 "
addrs=$(cat "$T_TMP"/par/*.out | jq -r '.ips[0].address' | sort)
t_is "200 addresses" "$(grep -c . <<<"$addrs")" 200
t_is "all distinct" "$(sort -u <<<"$addrs" | wc -l)" 200
t_is "200 reservation files" "$(ls "$D/hlnet" | grep -c '^10\.')" 200
pids=()
for ((w = 0; w < 16; w++)); do
	( for ((k = 0; k < 13; k++)); do
		env CNI_COMMAND=DEL CNI_CONTAINERID="p-$w-$k" CNI_IFNAME=eth0 CNI_PATH="$CNI_PATH" \
			"$T_BIN/host-local" <<<"$c" >/dev/null 2>&1 || echo "fail p-$w-$k"
	done ) >"$T_TMP/par/del-$w" &
	pids+=($!)
done
wait "${pids[@]}"
t_is "every DEL succeeded" "$(cat "$T_TMP"/par/del-*)" ""
t_is "DEL of all leaves only the bookkeeping files" "$(files hlnet)" "last_reserved_ip.0 lock"
rm -rf "${D:?}/hlnet"

# A store exactly as the reference writes it: honoured, released by DEL.
mkdir -p "$D/hlnet"
printf 'ref-a\r\neth0' >"$D/hlnet/10.200.43.2"
printf 'ref-b\r\neth0' >"$D/hlnet/10.200.43.4"
printf 'ref-old' >"$D/hlnet/10.200.43.5" # written before ifnames were recorded
printf 'ref-a\r\neth0' >"$D/hlnet/fd00:200:40::2"
printf '10.200.43.4' >"$D/hlnet/last_reserved_ip.0"
printf 'fd00:200:40::2' >"$D/hlnet/last_reserved_ip.1"
: >"$D/hlnet/lock"
fix="{\"ranges\":[[{\"subnet\":\"10.200.43.0/29\"}],[{\"subnet\":\"fd00:200:40::/125\"}]],\"dataDir\":\"$D\"}"
c=$(conf 1.0.0 "$fix")
got=""
for id in n1 n2; do cni_run host-local ADD "$ns" eth0 "$id" <<<"$c"; got="$got $(jq -r '[.ips[].address] | join(",")' <<<"$OUT")"; done
t_is "fixture addresses are never handed out; the reference's cursors are followed" "$got" \
	" 10.200.43.6/29,fd00:200:40::3/125 10.200.43.3/29,fd00:200:40::4/125"
t_is "the reference's files are untouched" "$(od -An -c "$D/hlnet/10.200.43.2" | tr -s ' ')" " r e f - a \r \n e t h 0"
cni_run host-local ADD "$ns" eth0 n3 <<<"$c"
t_err "and the range is then full" 999 'no IP addresses available in range set 0'
cni_run host-local CHECK "$ns" eth0 ref-a <<<"$c"
t_is "CHECK of a reference reservation" "$RC:$OUT" "0:"
cni_run host-local DEL "$ns" eth0 ref-a <<<"$c"
t_is "DEL by the reference's container id" "$RC" 0
cni_run host-local DEL "$ns" eth1 ref-old <<<"$c"
t_is "DEL of a reservation without ifname" "$RC" 0
cni_run host-local DEL "$ns" eth0 ref-b <<<"$c"
t_is "fixture reservations released" "$(files hlnet)" \
	"10.200.43.3 10.200.43.6 fd00:200:40::3 fd00:200:40::4 last_reserved_ip.0 last_reserved_ip.1 lock"
for id in n1 n2; do cni_run host-local DEL "$ns" eth0 "$id" <<<"$c"; done
rm -rf "${D:?}/hlnet"

# The reference binary side by side: each reads the other's store, and
# both share the lock.
if [ -x "$REF" ]; then
	c=$(conf 1.0.0 "$small")
	cni_run host-local ADD "$ns" eth0 ours <<<"$c"
	refrun() { env CNI_COMMAND="$1" CNI_CONTAINERID="$2" CNI_NETNS="$ns" CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni "$REF" 2>/dev/null; }
	out=$(refrun ADD theirs <<<"$c")
	t_is "the reference continues after our address" "$(jq -r '.ips[0].address' <<<"$out")" "10.200.41.3/29"
	cni_run host-local ADD "$ns" eth0 ours2 <<<"$c"
	t_json "we continue after the reference's" '.ips[0].address' "10.200.41.4/29"
	refrun DEL ours <<<"$c" >/dev/null
	refrun DEL ours2 <<<"$c" >/dev/null
	cni_run host-local DEL "$ns" eth0 theirs <<<"$c"
	t_is "each released the other's" "$(files hlnet)" "last_reserved_ip.0 lock"
	rm -rf "${D:?}/hlnet"
	c=$(conf 1.0.0 "$par")
	pids=()
	for ((w = 0; w < 8; w++)); do
		( for ((k = 0; k < 10; k++)); do
			if ((w % 2)); then refrun ADD "m-$w-$k" <<<"$c"; else
				env CNI_COMMAND=ADD CNI_CONTAINERID="m-$w-$k" CNI_NETNS="$ns" CNI_IFNAME=eth0 \
					CNI_PATH="$CNI_PATH" "$T_BIN/host-local" <<<"$c" 2>/dev/null
			fi | jq -r '.ips[0].address'
		done ) >"$T_TMP/par/mix-$w" &
		pids+=($!)
	done
	wait "${pids[@]}"
	t_is "80 ADDs mixed with the reference: 80 distinct addresses" \
		"$(cat "$T_TMP"/par/mix-* | grep -c '^10\.200\.42\.')/$(cat "$T_TMP"/par/mix-* | sort -u | wc -l)" "80/80"
	rm -rf "${D:?}/hlnet"
	# Same result as the reference for the same request, each in its own store.
	for v in 0.3.1 0.4.0 1.0.0; do
		c=$(conf "$v" "$(jq -c --arg r "$T_TMP/resolv.conf" '. + {resolvConf: $r}' <<<"$dual")")
		cni_run host-local ADD "$ns" eth0 same <<<"$c"
		ours=$(jq -S . <<<"$OUT")
		theirs=$(refrun ADD same <<<"$(jq -c --arg d "$T_TMP/refdata" '.ipam.dataDir = $d' <<<"$c")" | jq -S .)
		t_is "$v: same result as the reference" "$ours" "$theirs"
		t_is "$v: same files as the reference" "$(files hlnet)" "$(cd "$T_TMP/refdata/hlnet" && ls -A | sort | tr '\n' ' ' | sed 's/ $//')"
		rm -rf "${D:?}/hlnet" "$T_TMP/refdata"
	done
else
	t_skip "side by side with the reference" "$REF not installed"
fi

# DEL with prevResult releases the addresses it names without reading the
# others' files, when each range set shows one of this attachment's exact
# reservations; anything else (someone else's address, a record without
# an ifname, a set prevResult misses) falls back to reading every file.
withprev() { jq -c --argjson p "$1" '. + {prevResult: $p}' <<<"$2"; }
c=$(conf 1.0.0 "$dual")
for id in dp1 dp2; do cni_run host-local ADD "$ns" eth0 "$id" <<<"$c"; eval "res_$id=\$OUT"; done
cni_run host-local ADD "$ns" eth1 dp1 <<<"$c"; res_dp1b=$OUT
cni_run host-local DEL "$ns" eth0 dp1 <<<"$(withprev "$res_dp1" "$c")"
t_is "DEL with prevResult" "$RC:$OUT" "0:"
t_is "  released exactly that attachment's addresses" "$(files hlnet)" \
	"10.200.40.3 10.200.40.4 fd00:200:40::3 fd00:200:40::4 last_reserved_ip.0 last_reserved_ip.1 lock"
cni_run host-local DEL "$ns" eth0 dp1 <<<"$(withprev "$res_dp1" "$c")"
t_is "  again: nothing left to release" "$RC:$(files hlnet | wc -w)" "0:7"
# prevResult naming dp2's v4 address for dp1/eth1: read everything, release
# only dp1/eth1's.
cni_run host-local DEL "$ns" eth1 dp1 <<<"$(withprev "$(jq -c --argjson o "$res_dp2" '.ips[0] = $o.ips[0]' <<<"$res_dp1b")" "$c")"
t_is "DEL with someone else's address in prevResult releases only its own" "$RC:$(files hlnet)" \
	"0:10.200.40.3 fd00:200:40::3 last_reserved_ip.0 last_reserved_ip.1 lock"
# prevResult without the v6 address: both go all the same.
cni_run host-local DEL "$ns" eth0 dp2 <<<"$(withprev "$(jq -c '.ips |= .[:1]' <<<"$res_dp2")" "$c")"
t_is "DEL with prevResult missing a range set releases every address" "$RC:$(files hlnet)" \
	"0:last_reserved_ip.0 last_reserved_ip.1 lock"
# A record without an ifname; an address of another IPAM in prevResult.
printf 'dp3' >"$D/hlnet/10.200.40.9"
cni_run host-local DEL "$ns" eth0 dp3 <<<"$(withprev '{"cniVersion":"1.0.0","ips":[{"address":"10.200.40.9/24"}]}' "$c")"
t_is "DEL from prevResult of a record without an ifname" "$RC:$(files hlnet)" \
	"0:last_reserved_ip.0 last_reserved_ip.1 lock"
printf 'other\r\neth0' >"$D/hlnet/192.0.2.7"
cni_run host-local ADD "$ns" eth0 dp4 <<<"$c"
cni_run host-local DEL "$ns" eth0 dp4 <<<"$(withprev "$(jq -c '.ips += [{"address":"192.0.2.7/24"}]' <<<"$OUT")" "$c")"
t_is "  another IPAM's address in prevResult is left alone" "$RC:$(files hlnet)" \
	"0:192.0.2.7 last_reserved_ip.0 last_reserved_ip.1 lock"
if command -v strace >/dev/null; then
	for i in $(seq 10 60); do printf 'r-%s\r\neth0' "$i" >"$D/hlnet/10.200.40.$i"; done
	# CMD ID [PREV]: run under strace (where LeakSanitizer cannot), count
	# the reservation files opened.
	traced() {
		OUT=$(env CNI_COMMAND="$1" CNI_NETNS="$ns" CNI_IFNAME=eth0 CNI_CONTAINERID="$2" \
			ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
			strace -qq -f -e trace=openat -o "$T_TMP/strace" "$T_BIN/host-local" \
			<<<"$(if [ -n "${3-}" ]; then withprev "$3" "$c"; else echo "$c"; fi)")
		RC=$?
		OPENED=$(grep -cE 'openat\([0-9]+, "[0-9a-fA-F][0-9a-fA-F:.]*"' "$T_TMP/strace")
	}
	traced ADD dp5
	t_is "ADD after another changed the store reads every reservation" "$RC:$OPENED" "0:52"
	traced DEL dp5 "$OUT"
	t_is "DEL from prevResult reads only its own two" "$RC:$OPENED" "0:2"
	traced ADD dp6
	t_is "ADD reads none of those it knows from the owner cache" "$RC:$OPENED" "0:0"
	traced ADD dp7
	traced DEL dp6
	t_is "DEL without prevResult reads only its own two" "$RC:$OPENED" "0:2"
	t_is "  and releases them" "$(ls "$D/hlnet" | grep -c '^\(10\|fd\)')" 53
	printf 'r-x\r\neth0' >"$D/hlnet/10.200.40.99"
	traced ADD dp8
	t_is "every file is read again once another changed the store" "$RC:$OPENED" "0:55"
	for id in dp7 dp8; do cni_run host-local DEL "$ns" eth0 "$id" <<<"$c"; done
else
	t_skip "DEL and ADD read only what they must" "strace not installed"
fi
t_like "the owner cache is in the lock file" "$(head -1 "$D/hlnet/lock")" '^# cni host-local owner cache'
rm -rf "${D:?}/hlnet"

# The owner cache beside the reference: whatever it changes is seen.
if [ -x "$REF" ]; then
	c=$(conf 1.0.0 "$small")
	cni_run host-local ADD "$ns" eth0 oc1 <<<"$c"
	t_json "ADD" '.ips[0].address' "10.200.41.2/29"
	refrun DEL oc1 <<<"$c" >/dev/null
	# The reference gives the same name (and likely the same inode) to
	# another container: its second ADD by us is a duplicate.
	out=$(env CNI_COMMAND=ADD CNI_CONTAINERID=oc2 CNI_NETNS="$ns" CNI_IFNAME=eth0 CNI_ARGS=IP=10.200.41.2 \
		CNI_PATH=/usr/lib/cni "$REF" <<<"$c" 2>/dev/null)
	t_is "the reference reuses the address" "$(jq -r '.ips[0].address' <<<"$out")" "10.200.41.2/29"
	cni_run host-local ADD "$ns" eth0 oc2 <<<"$c"
	t_err "a second ADD of the reference's attachment is refused" 999 '10\.200\.41\.2 is already allocated to oc2'
	cni_run host-local ADD "$ns" eth0 oc3 <<<"$c"
	t_json "ours continues after the reference's" '.ips[0].address' "10.200.41.3/29"
	refrun CHECK oc3 <<<"$(withprev "$OUT" "$c")" >/dev/null
	t_is "the reference's CHECK of ours, with the cache in the lock" "$?" 0
	refrun DEL oc3 <<<"$c" >/dev/null
	refrun DEL oc2 <<<"$c" >/dev/null
	t_is "the reference's DELs keep the lock file" "$(files hlnet)" "last_reserved_ip.0 lock"
	cni_run host-local ADD "$ns" eth0 oc3 <<<"$c"
	t_json "ours ADDs again what the reference released" '.ips[0].address' "10.200.41.4/29"
	rm -rf "${D:?}/hlnet"
fi

# Malformed configs: code 7 naming the field, and nothing written.
bad() {
	local desc=$1 ipam=$2 re=$3 extra=${4:-{\}}
	cni_run host-local ADD "$ns" eth0 bad <<<"$(conf 1.0.0 "$ipam" "$extra")"
	t_err "$desc" 7 "$re"
}
bad "bad CIDR" "{\"subnet\":\"10.200.46.0/33\",\"dataDir\":\"$D\"}" 'ipam\.subnet: not a CIDR'
bad "bad CIDR in ranges" "{\"ranges\":[[{\"subnet\":\"10.200.46.x/24\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]\[0\]\.subnet: not a CIDR'
bad "host bits set" "{\"ranges\":[[{\"subnet\":\"10.200.46.1/24\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]\[0\]\.subnet: host bits set'
bad "/31 too small" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/31\"}]],\"dataDir\":\"$D\"}" 'subnet: .* too small'
bad "/128 too small" "{\"ranges\":[[{\"subnet\":\"fd00:200:40::/128\"}]],\"dataDir\":\"$D\"}" 'subnet: .* too small'
bad "rangeStart outside subnet" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\",\"rangeStart\":\"10.200.47.1\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]\[0\]\.rangeStart: 10\.200\.47\.1 is not in subnet'
bad "rangeEnd outside subnet" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\",\"rangeEnd\":\"10.200.47.1\"}]],\"dataDir\":\"$D\"}" 'rangeEnd: 10\.200\.47\.1 is not in subnet'
bad "start after end" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\",\"rangeStart\":\"10.200.46.9\",\"rangeEnd\":\"10.200.46.3\"}]],\"dataDir\":\"$D\"}" 'rangeStart: rangeStart 10\.200\.46\.9 is after rangeEnd'
bad "gateway outside subnet" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\",\"gateway\":\"10.200.47.1\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]\[0\]\.gateway: 10\.200\.47\.1 is not in subnet'
bad "mixed families in a set" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"},{\"subnet\":\"fd00:200:40::/64\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]\[1\]: mixed address families'
bad "overlapping sets" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}],[{\"subnet\":\"10.200.46.0/25\"}]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[1\]: overlaps'
bad "no ranges" "{\"dataDir\":\"$D\"}" 'ipam\.ranges: no IP ranges'
bad "empty range set" "{\"ranges\":[[]],\"dataDir\":\"$D\"}" 'ipam\.ranges\[0\]: empty range set'
bad "traversal in dataDir" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"dataDir\":\"$D/../escape\"}" 'ipam\.dataDir: .*\.\.'
bad "relative dataDir" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"dataDir\":\"data\"}" 'ipam\.dataDir: .*not an absolute path'
bad "bad route" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"routes\":[{\"dst\":\"10.200.47.0\"}],\"dataDir\":\"$D\"}" 'ipam\.routes\[0\]\.dst: not a CIDR'
bad "bad ipRanges" "{\"dataDir\":\"$D\"}" 'runtimeConfig\.ipRanges\[0\]\[0\]\.subnet: not a CIDR' '{"runtimeConfig":{"ipRanges":[[{"subnet":"nope"}]]}}'
bad "bad args.cni.ips" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"dataDir\":\"$D\"}" 'args\.cni\.ips\[0\]' '{"args":{"cni":{"ips":["10.200.46.300"]}}}'
bad "traversal in name" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"dataDir\":\"$D\"}" '^name: invalid network name' '{"name":"../escape"}'
bad "slash in name" "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}]],\"dataDir\":\"$D\"}" '^name: invalid network name' '{"name":"a/b"}'
cni_run host-local ADD "$ns" eth0 bad <<<'{"cniVersion":"1.0.0","name":"hlnet","type":"bridge"}'
t_err "no ipam" 7 '^ipam: missing'
t_is "malformed configs wrote nothing" "$(ls -A "$D" 2>/dev/null; ls -A "$T_TMP" | grep -c escape)" "0"
cni_run host-local ADD "$ns" eth0 bad <<<"$(conf 0.2.0 "{\"ranges\":[[{\"subnet\":\"10.200.46.0/24\"}],[{\"subnet\":\"10.200.47.0/24\"}]],\"dataDir\":\"$D\"}")"
t_err "two IPv4 sets in 0.2.0" 1 'more than one address per family'

t_done
