#!/usr/bin/env bash
# meson install with -Dinstall_symlinks: the binary, the man pages and one
# symlink per applet under DESTDIR, naming the installed binary (not the
# staged copy, which is gone once a package is unpacked). Its own build dir,
# configured from the source tree, so the main build is never reconfigured;
# compiling it takes some 20 s. Also cni --install --target by hand.
. "$CNI_TESTS/lib.sh"

B="$T_TMP/b" D="$T_TMP/dest" L=/opt/cni/bin
log="$T_TMP/log"

if ! meson setup "$B" "$CNI_TESTS/.." -Dinstall_symlinks=$L -Dtests=disabled >"$log" 2>&1 ||
	! meson compile -C "$B" cni >>"$log" 2>&1; then
	t_fail "configure and build with -Dinstall_symlinks=$L" "$(tail -20 "$log")"
	t_done
fi
t_pass "configure and build with -Dinstall_symlinks=$L"

# Where meson puts each file, without DESTDIR: the prefix decides, not us.
installed=$(meson introspect "$B" --installed)
bin=$(jq -r 'to_entries[] | select(.key | endswith("/cni")) | .value' <<<"$installed")
mapfile -t mans < <(jq -r '.[] | select(test("/man[18]/"))' <<<"$installed")
t_like "the binary goes to prefix/bindir" "$bin" '^/.*/bin/cni$'

t_ok "meson install --destdir succeeds" meson install -C "$B" --no-rebuild --destdir "$D"
t_ok "the binary is installed" test -x "$D$bin" -a ! -L "$D$bin"
t_is "the installed binary runs" "$("$D$bin" --version | cut -d' ' -f1)" cni
missing=
for m in "${mans[@]}"; do [ -f "$D$m" ] || missing="$missing $m"; done
t_is "every man page is installed (${#mans[@]})" "${missing:-none}" none
t_like "cni(1) is among them" "${mans[*]}" '/man1/cni\.1( |$)'

# The same names as cni --install gives, every one a symlink to $bin.
"$B/cni" --install "$T_TMP/ref" >/dev/null 2>&1
want=$(ls "$T_TMP/ref")
t_is "one symlink per linkable applet in $L" "$(ls "$D$L")" "$want"
bad=
for f in "$D$L"/*; do
	if ! [ -L "$f" ] || [ "$(readlink "$f")" != "$bin" ]; then
		bad="$bad ${f##*/}->$(readlink "$f")"
	fi
done
t_is "every symlink names $bin, not the staged copy" "${bad:-none}" none
t_is "loopback symlink" "$(readlink "$D$L/loopback")" "$bin"
t_is "no temporary link left behind" "$(find "$D$L" -name '.*' | wc -l)" 0

t_ok "installing again replaces the symlinks" meson install -C "$B" --no-rebuild --destdir "$D" --quiet
rm "$D$L/loopback"
echo keep >"$D$L/loopback"
t_nok "install refuses to overwrite another package's plugin" \
	meson install -C "$B" --no-rebuild --destdir "$D" --quiet
t_is "that plugin is untouched" "$(cat "$D$L/loopback")" keep

# --target by hand: verbatim (relative allowed), with or after --force.
t_ok "--install --target" "$B/cni" --install "$T_TMP/t" --target ../bin/cni
t_is "the link is the target verbatim" "$(readlink "$T_TMP/t/loopback")" ../bin/cni
rm "$T_TMP/t/loopback"
echo keep >"$T_TMP/t/loopback"
t_ok "--force --target in either order" "$B/cni" --install "$T_TMP/t" --force --target /x/cni
t_is "forced link" "$(readlink "$T_TMP/t/loopback")" /x/cni
t_ok "--target --force" "$B/cni" --install "$T_TMP/t" --target /y/cni --force
t_is "relinked" "$(readlink "$T_TMP/t/loopback")" /y/cni
t_nok "--target without PATH is a usage error" "$B/cni" --install "$T_TMP/t" --target
t_nok "--target with an empty PATH is a usage error" "$B/cni" --install "$T_TMP/t" --target ''
t_nok "an unknown option is a usage error" "$B/cni" --install "$T_TMP/t" --bogus
t_done
