#!/usr/bin/env bash
# loopback: ADD/CHECK/DEL/DEL-again in a real namespace, in every result
# version, and driven by the reference library libcni.
. "$CNI_TESTS/lib.sh"

lo_up() { ip -n "$1" -o link show lo | grep -q '[<,]UP[,>]'; }

ns=$(t_netns lo)
nsname=${ns##*/}
ip -n "$nsname" link set lo down

for v in 0.1.0 0.2.0 0.3.0 0.3.1 0.4.0 1.0.0 1.1.0; do
	conf="{\"cniVersion\":\"$v\",\"name\":\"lonet\",\"type\":\"loopback\"}"
	cni_run loopback ADD "$ns" lo "c-$v" <<<"$conf"
	t_is "$v ADD exits 0" "$RC" 0
	t_json "$v result version" .cniVersion "$v"
	case $v in
	0.1.0|0.2.0)
		t_json "$v ip4" .ip4.ip 127.0.0.1/8
		t_json "$v ip6" .ip6.ip ::1/128 ;;
	*)
		t_json "$v interface" '.interfaces[0].name + " " + .interfaces[0].mac + " " + .interfaces[0].sandbox' "lo 00:00:00:00:00:00 $ns"
		t_json "$v addresses" '[.ips[].address]|join(",")' "127.0.0.1/8,::1/128"
		t_json "$v ips point at lo" '[.ips[].interface]|join(",")' "0,0" ;;
	esac
	t_ok "$v lo is up" lo_up "$nsname"
	prev=$OUT
	if [ "$v" != 0.1.0 ] && [ "$v" != 0.2.0 ] && [ "$v" != 0.3.0 ] && [ "$v" != 0.3.1 ]; then
		cni_run loopback CHECK "$ns" lo "c-$v" <<<"$(jq -c --argjson p "$prev" '. + {prevResult: $p}' <<<"$conf")"
		t_is "$v CHECK passes while up" "$RC:$OUT" "0:"
	fi
	cni_run loopback DEL "$ns" lo "c-$v" <<<"$conf"
	t_is "$v DEL exits 0 and prints nothing" "$RC:$OUT" "0:"
	t_nok "$v lo is down after DEL" lo_up "$nsname"
	cni_run loopback DEL "$ns" lo "c-$v" <<<"$conf"
	t_is "$v DEL again succeeds" "$RC" 0
done

conf='{"cniVersion":"1.0.0","name":"lonet","type":"loopback"}'
cni_run loopback CHECK "$ns" lo c1 <<<"$conf"
t_err "CHECK fails while lo is down" 999 'down'

# DEL tolerates a namespace that is already gone, or no CNI_NETNS at all.
ip netns add "cni-$T_TAG-gone"; gone=/run/netns/cni-$T_TAG-gone
ip netns del "cni-$T_TAG-gone"
cni_run loopback DEL "$gone" lo c1 <<<"$conf"; t_is "DEL with the namespace gone" "$RC:$OUT" "0:"
cni_run loopback DEL "" lo c1 <<<"$conf"; t_is "DEL without CNI_NETNS" "$RC:$OUT" "0:"
cni_run loopback ADD "$gone" lo c1 <<<"$conf"; t_like "ADD with the namespace gone fails" "$RC" '^[1-9]'

# The reference library drives our loopback through CNI_PATH.
drv="$CNI_BUILD/tests/libcni-driver"
if [ ! -x "$drv" ]; then
	bash "$CNI_TESTS/libcni/build.sh" "$drv" >"$T_TMP/gobuild.log" 2>&1
fi
if [ ! -x "$drv" ]; then
	t_skip "libcni drives loopback" "libcni driver not built: $(tail -1 "$T_TMP/gobuild.log")"
else
	export CNI_CACHE_DIR="$T_TMP/cache"
	for v in 0.3.1 0.4.0 1.0.0; do
		f="$T_TMP/lo-$v.conflist"
		echo "{\"cniVersion\":\"$v\",\"name\":\"lolib\",\"plugins\":[{\"type\":\"loopback\"}]}" >"$f"
		OUT=$("$drv" add "$f" "$ns" "lib-$v" lo 2>"$T_TMP/drv.err"); rc=$?
		t_is "libcni $v ADD" "$rc" 0
		t_json "libcni $v sees our addresses" '[.ips[].address]|join(",")' "127.0.0.1/8,::1/128"
		if [ "$v" != 0.3.1 ]; then
			t_ok "libcni $v CHECK" "$drv" check "$f" "$ns" "lib-$v" lo
		fi
		t_ok "libcni $v DEL" "$drv" del "$f" "$ns" "lib-$v" lo
		t_nok "libcni $v cache entry removed" test -e "$CNI_CACHE_DIR/results/lolib-lib-$v-lo"
	done
fi
t_done
