#!/usr/bin/env bash
# Concurrency: 16 ADDs at once, then 16 DELs, on one network whose applets
# share host state: the bridge (created by whichever ADD comes first) and
# its gateway addresses, the host-local store, the netfilter tables and
# maps of portmap, firewall and ipMasq, and tuning's backup directory. For
# each backend (nftables; iptables when usable), in a namespace that plays
# the host:
#
#   round 0  16 `cni exec add` (half in process, half --exec) on a host
#            without the bridge; then 16 `cni exec del`
#   round 1  16 `cni exec add` again; then, at the same time, their 16 DELs
#            and 16 ADDs of other containers run by a runtime that executes
#            the plugins through their symlinks; then those 16 DELs
#
# After the ADDs: every call succeeded, no address is given twice, the
# store holds exactly one reservation per address, the bridge has one
# gateway address per family and one port per container, every container
# has its address, MTU and sysctl, and every attachment has the same
# number of rules (none lost), with 16 elements in each shared map. After
# the DELs: none of it is left, and after the last round the host is
# exactly as it was after round 0.
. "$CNI_TESTS/lib.sh"
. "$CNI_TESTS/fixtures/chain/helpers.sh"

for tool in jq nft ping; do
	if ! command -v "$tool" >/dev/null; then
		t_skip "concurrency" "$tool not installed"
		t_done
	fi
done
N=16

# rules_dump: the host's nftables and iptables rules, in $T_TMP/rules;
# rules_for ADDR: how many of those lines mention ADDR.
rules_dump() {
	{
		hx nft list ruleset 2>/dev/null
		hx iptables-save 2>/dev/null
		hx ip6tables-save 2>/dev/null
	} >"$T_TMP/rules"
}
rules_for() { grep -cE -- "(^|[^0-9a-f:])${1//./\\.}([^0-9a-f:]|\$)" "$T_TMP/rules"; }

# Elements per map of table inet cni, "name count" lines (maps of portmap,
# firewall and ipMasq).
map_sizes() {
	hx nft -j list table inet cni 2>/dev/null |
		jq -r '.nftables[] | select(.map) | .map | "\(.name) \(.elem // [] | length)"' | sort
}

# ip -o addr of the container's eth0, global scope.
cont_ips() { ip -n "$1" -o addr show dev eth0 scope global 2>/dev/null | awk '{print $4}'; }

# check_added TAG B DIR BR S4 RESULTS: the state with the N attachments
# whose results are the files RESULTS/out.<i> (containers cc<i>).
check_added() {
	local tag=$1 b=$2 dir=$3 br=$4 s4=$5 res=$6 i a4 a6 c counts
	local -a v4=() v6=()
	for ((i = 1; i <= N; i++)); do
		a4=$(jq -r '.ips[] | select(.address | contains(".")) | .address' "$res/out.$i" 2>/dev/null)
		a6=$(jq -r '.ips[] | select(.address | contains(":")) | .address' "$res/out.$i" 2>/dev/null)
		v4+=("$a4")
		v6+=("$a6")
	done
	t_is "$tag: $N IPv4 addresses, all different, none the gateway" \
		"$(printf '%s\n' "${v4[@]}" | grep -E "^$s4\.([2-9]|[1-9][0-9]+)/24$" | sort -u | wc -l)" "$N"
	t_is "$tag: $N IPv6 addresses, all different, none the gateway" \
		"$(printf '%s\n' "${v6[@]}" | grep -E '^fd00:200:110::([2-9a-f]|[1-9a-f][0-9a-f]+)/64$' | sort -u | wc -l)" "$N"
	t_is "$tag: the store holds exactly those addresses" \
		"$(cd "$dir/ipam/tcc-$b" && ls | grep -v '^lock$\|^last_reserved' | sort | tr '\n' ' ')" \
		"$(printf '%s\n' "${v4[@]%/*}" "${v6[@]%/*}" | sort | tr '\n' ' ')"
	t_is "$tag: each container owns one reservation per family" \
		"$(cd "$dir/ipam/tcc-$b" && for f in *; do
			case $f in lock | last_reserved_ip.*) ;; *) head -1 "$f" | tr -d '\r'; echo ;; esac
		done | sort | uniq -c | awk '$1 == 2' | wc -l)" "$N"
	t_is "$tag: one gateway address per family on the bridge" \
		"$(hx ip -o addr show dev "$br" scope global | awk '{print $4}' | sort | tr '\n' ' ')" \
		"$s4.1/24 fd00:200:110::1/64 "
	t_is "$tag: one bridge port per container" "$(hx ip -o link show master "$br" | wc -l)" "$N"
	local bad=
	for ((i = 1; i <= N; i++)); do
		c=${CONT[$i]##*/}
		[ "$(cont_ips "$c" | sort | tr '\n' ' ')" = "$(printf '%s\n' "${v4[i - 1]}" "${v6[i - 1]}" | sort | tr '\n' ' ')" ] &&
			[ "$(ip -n "$c" -o link show eth0 | grep -o 'mtu [0-9]*')" = "mtu 1400" ] &&
			[ "$(ip netns exec "$c" cat /proc/sys/net/core/somaxconn)" = 1000 ] ||
			bad="$bad $i"
	done
	t_is "$tag: every container has its addresses, MTU and sysctl" "$bad" ""
	t_ok "$tag: the first container pings the last one" \
		ip netns exec "${CONT[1]##*/}" ping -c1 -W2 "${v4[N - 1]%/*}"
	rules_dump
	counts=$(for ((i = 0; i < N; i++)); do
		echo "$(rules_for "${v4[i]%/*}") $(rules_for "${v6[i]%/*}")"
	done | sort -u)
	t_like "$tag: every attachment has the same rules, none lost" "$counts" '^[1-9][0-9]* [1-9][0-9]*$'
	if [ "$b" = nftables ]; then
		t_is "$tag: $N elements per family in every shared map" \
			"$(map_sizes | awk -v n="$N" '$1 ~ /^pm_hostip/ { next }
				$1 == "pm_any" { print $1, ($2 == 2 * n) ? "ok" : $2; next }
				{ print $1, ($2 == n) ? "ok" : $2 }' | grep -v ' ok$')" ""
	else
		t_is "$tag: one portmap DNAT chain per container and family" \
			"$({ hx iptables -t nat -S; hx ip6tables -t nat -S; } | grep -c '^-N CNI-DN-')" "$((2 * N))"
		t_is "$tag: two firewall rules per address" \
			"$({ hx iptables -S CNI-FORWARD; hx ip6tables -S CNI-FORWARD; } | grep -c -- '-j ACCEPT$')" "$((4 * N))"
	fi
	V4=("${v4[@]}")
	V6=("${v6[@]}")
}

# check_deleted TAG B DIR BR: nothing of the N attachments left.
check_deleted() {
	local tag=$1 b=$2 dir=$3 br=$4 i left=
	rules_dump
	for ((i = 0; i < N; i++)); do
		[ "$(rules_for "${V4[i]%/*}")" = 0 ] && [ "$(rules_for "${V6[i]%/*}")" = 0 ] || left="$left ${V4[i]}"
	done
	t_is "$tag: no rule mentions any of their addresses" "$left" ""
	t_is "$tag: no bridge port left" "$(hx ip -o link show master "$br" | wc -l)" 0
	t_is "$tag: no reservation left" "$(cd "$dir/ipam/tcc-$b" && ls | grep -vc '^lock$\|^last_reserved')" 0
	t_is "$tag: no cache entry, no tuning backup left" \
		"$(find "$dir/cache/results" "$dir/tuning" -type f 2>/dev/null | wc -l)" 0
	if [ "$b" = nftables ]; then
		t_is "$tag: every shared map is empty" "$(map_sizes | awk '$2 != 0')" ""
		t_is "$tag: no chain of an attachment left" \
			"$(hx nft list table inet cni | grep -cE 'chain (pm|pmm|masq|fw)-')" 0
	fi
}

# par TAG CMD...: run CMD i for i = 1..N at once; CMD sets RC and OUT.
par() {
	local tag=$1 i bad t0=$SECONDS
	shift
	rm -rf "$T_TMP/par"
	mkdir -p "$T_TMP/par"
	for ((i = 1; i <= N; i++)); do
		(
			"$@" "$i"
			printf '%s' "$RC" >"$T_TMP/par/rc.$i"
			printf '%s' "$OUT" >"$T_TMP/par/out.$i"
			printf '%s' "${ERR-}" >"$T_TMP/par/err.$i"
		) &
	done
	wait
	bad=$(for ((i = 1; i <= N; i++)); do
		[ "$(cat "$T_TMP/par/rc.$i" 2>/dev/null)" = 0 ] || echo "$i: $(cat "$T_TMP/par/out.$i" "$T_TMP/par/err.$i" 2>/dev/null)"
	done)
	t_is "$tag: all $N succeed ($((SECONDS - t0)) s)" "$bad" ""
}

run_backend() {
	local b=$1 s4=$2 dir=$T_TMP/$1 conf br=tcc$$ i base t0
	ch_host "h$b" || { t_fail "$b: create the host namespace"; return; }
	mkdir -p "$dir"
	conf=$dir/chain.conflist
	ch_conflist "$conf" "tcc-$b" "$b" "$br" "$s4" "$dir"
	CONT=()
	for ((i = 1; i <= 2 * N; i++)); do
		CONT[i]=$(t_netns "$b$i")
	done
	t0=$SECONDS
	# cni exec, every other one with every plugin executed.
	x_add() { chx "$conf" --cache-dir "$dir/cache" --cni-path "$T_BIN" add "${CONT[$1]}" \
		$([ $(($1 % 2)) = 0 ] && echo --exec) --cap-args "$(ch_ports "$1")" --json; }
	x_del() { chx "$conf" --cache-dir "$dir/cache" --cni-path "$T_BIN" del "${CONT[$1]}" \
		$([ $(($1 % 2)) = 1 ] && echo --exec); }
	# A runtime of our own, executing the plugins through the symlinks,
	# for containers N+1..2N.
	d_add() {
		ch_direct ADD "$conf" "${CONT[$((N + $1))]}" "ccd$1" eth0 "$(ch_ports $((N + $1)))" null
		RC=$?
	}
	d_del() {
		ch_direct DEL "$conf" "${CONT[$((N + $1))]}" "ccd$1" eth0 "$(ch_ports $((N + $1)))" \
			"$(cat "$T_TMP/dres.$1")"
		RC=$?
		OUT=
	}

	par "$b: round 0: ADD on a host without the bridge" x_add
	rm -rf "$T_TMP/r0" && cp -r "$T_TMP/par" "$T_TMP/r0"
	check_added "$b: round 0" "$b" "$dir" "$br" "$s4" "$T_TMP/r0"
	par "$b: round 0: DEL" x_del
	check_deleted "$b: round 0" "$b" "$dir" "$br"
	base=$(ch_snapshot "$dir")

	par "$b: round 1: ADD" x_add
	rm -rf "$T_TMP/r1" && cp -r "$T_TMP/par" "$T_TMP/r1"
	check_added "$b: round 1" "$b" "$dir" "$br" "$s4" "$T_TMP/r1"
	local V4_1=("${V4[@]}") V6_1=("${V6[@]}")
	# Their DELs, while a second runtime adds 16 more.
	rm -rf "$T_TMP/par"
	rm -rf "$T_TMP/r2"
	mkdir -p "$T_TMP/par" "$T_TMP/r2"
	for ((i = 1; i <= N; i++)); do
		(
			d_add "$i"
			printf '%s' "$RC" >"$T_TMP/r2/rc.$i"
			printf '%s' "$OUT" >"$T_TMP/r2/out.$i"
			cp "$T_TMP/r2/out.$i" "$T_TMP/dres.$i"
		) &
		(
			x_del "$i"
			printf '%s' "$RC" >"$T_TMP/par/rc.$i"
			printf '%s' "$OUT $ERR" >"$T_TMP/par/out.$i"
		) &
	done
	wait
	local bad
	bad=$(for ((i = 1; i <= N; i++)); do
		[ "$(cat "$T_TMP/par/rc.$i")" = 0 ] || echo "del $i: $(cat "$T_TMP/par/out.$i")"
		[ "$(cat "$T_TMP/r2/rc.$i")" = 0 ] || echo "add $i: $(cat "$T_TMP/r2/out.$i")"
	done)
	t_is "$b: round 1: $N DELs and $N ADDs through the symlinks at once all succeed" "$bad" ""
	V4=("${V4_1[@]}")
	V6=("${V6_1[@]}")
	local left=
	rules_dump
	for ((i = 0; i < N; i++)); do
		[ "$(rules_for "${V4[i]%/*}")" = 0 ] || grep -qxF "${V4[i]}" <(jq -r '.ips[].address' "$T_TMP"/r2/out.* 2>/dev/null) ||
			left="$left ${V4[i]}"
	done
	t_is "$b: round 1: the deleted attachments' rules are gone (unless the address was reused)" "$left" ""
	local saved=("${CONT[@]}")
	for ((i = 1; i <= N; i++)); do CONT[i]=${saved[N + i - 1]}; done
	check_added "$b: round 1, the ADDs through the symlinks" "$b" "$dir" "$br" "$s4" "$T_TMP/r2"
	for ((i = 1; i <= 2 * N; i++)); do CONT[i]=${saved[i - 1]}; done
	par "$b: round 1: DEL through the symlinks" d_del
	check_deleted "$b: round 1" "$b" "$dir" "$br"
	t_is "$b: the host is as after round 0" "$(diff <(echo "$base") <(ch_snapshot "$dir"))" ""
	t_diag "$b: $((SECONDS - t0)) s"
}

run_backend nftables 10.200.110
if ch_have_ipt; then
	run_backend iptables 10.200.111
else
	t_skip "iptables backend" "iptables-restore not usable"
fi
t_done
