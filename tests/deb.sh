#!/usr/bin/env bash
# The Debian package, end to end: dpkg-buildpackage -b on a copy of the work
# tree (so nothing lands beside the checkout), the .deb's contents, dpkg -i,
# the installed binary, links and man pages, the Kubernetes example's install
# script, then dpkg --purge and proof that nothing is left. TAP; needs root
# (dpkg) and takes about 40 s once its packages are installed, so it is not
# part of meson test:
#
#   tests/deb.sh
#
# Installs what building needs (debhelper, ...) if missing. The package is
# removed on every exit path; a cni package or /usr/bin/cni already on the
# machine stops the test before anything is changed.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
[ "$(id -u)" -eq 0 ] || exec sudo "$0" "$@"

# The binary under test is the installed one; lib.sh's scratch links to it
# are made before it exists and stay empty, which nothing here uses.
export CNI_BIN=/usr/bin/cni CNI_TESTS="$src/tests"
. "$CNI_TESTS/lib.sh"

if dpkg-query -W -f='${Status}' cni 2>/dev/null | grep -q 'installed'; then
	t_fail "no cni package installed before the test" "remove it first: dpkg --purge cni"
	t_done
fi
for f in /usr/bin/cni /usr/libexec/cni; do
	if [ -e "$f" ] || [ -L "$f" ]; then
		t_fail "$f does not exist before the test" "dpkg -i would replace it and dpkg --purge remove it"
		t_done
	fi
done

"$src/tests/deps" || { t_fail "tests/deps installs the build dependencies"; t_done; }
missing=
for p in build-essential debhelper dpkg-dev fakeroot python3-yaml; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q '^install ok installed' ||
		missing="$missing $p"
done
if [ -n "$missing" ]; then
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
fi

# The tracked and the new (not ignored) files of the work tree, as the lead
# would commit them; deleted ones are skipped.
W="$T_TMP/cni"
mkdir -p "$W"
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
	tar -C "$src" --null --ignore-failed-read -T - -cf - 2>/dev/null | tar -C "$W" -xf -
t_ok "the copy has debian/rules" test -x "$W/debian/rules"

# dpkg-buildpackage writes into debian/ and ../: neither may be the checkout's.
before=$(ls -a "$src/.."; find "$src/debian" | sort)
log="$T_TMP/build.log"
start=$SECONDS
if (cd "$W" && dpkg-checkbuilddeps && dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
	t_pass "dpkg-buildpackage -us -uc -b ($((SECONDS - start)) s)"
else
	t_fail "dpkg-buildpackage -us -uc -b" "$(tail -30 "$log")"
	t_done
fi
deb=$(ls "$T_TMP"/cni_*.deb 2>/dev/null | head -1)
t_ok "a cni_*.deb is built beside the copy" test -f "$deb"
t_is "nothing is written beside the checkout or into its debian/" \
	"$(ls -a "$src/.."; find "$src/debian" | sort)" "$before"

version=$(cd "$W" && dpkg-parsechangelog -S Version)
project=$(sed -n "s/^  version: '\(.*\)',$/\1/p" "$src/meson.build")
t_is "debian/changelog has meson.build's version" "$version" "$project"

contents=$(dpkg-deb -c "$deb")
t_like "the .deb has /usr/bin/cni" "$contents" '^-rwxr-xr-x root/root .* \./usr/bin/cni$'
t_like "the .deb has cni(1)" "$contents" '\./usr/share/man/man1/cni\.1\.gz$'
t_like "the .deb has cni-loopback(8)" "$contents" '\./usr/share/man/man8/cni-loopback\.8\.gz$'
t_like "the .deb links /usr/libexec/cni/loopback relatively" "$contents" \
	'\./usr/libexec/cni/loopback -> \.\./\.\./bin/cni$'
t_unlike "the .deb has nothing in /usr/lib/cni" "$contents" '\./usr/lib/cni/'
t_like "the .deb has README.Debian and the example" "$contents" \
	'/usr/share/doc/cni/README\.Debian.*/usr/share/doc/cni/examples/kubernetes-daemonset\.yaml'
depends=$(dpkg-deb -f "$deb" Depends)
t_like "Depends come from the linked libraries" "$depends" 'libnftables1.*libyajl2|libyajl2.*libnftables1'

t_defer "dpkg --purge cni"
t_ok "dpkg -i" dpkg -i "$deb"
t_is "the installed binary runs" "$(cni --version | cut -d' ' -f1-2)" "cni $project"
n=0 bad=
for l in /usr/libexec/cni/*; do
	n=$((n + 1))
	[ "$(readlink -f "$l")" = /usr/bin/cni ] || bad="$bad $l"
done
t_is "every /usr/libexec/cni link resolves to /usr/bin/cni" "${bad:-none}" none
"$CNI_BIN" --install "$T_TMP/ref" >/dev/null 2>&1
t_is "one link per linkable applet ($n)" "$n" "$(ls "$T_TMP/ref" | wc -l)"
t_ok "cni --install /tmp/... from the installed binary" cni --install "$T_TMP/x"
t_is "those links name /usr/bin/cni" "$(readlink "$T_TMP/x/loopback")" /usr/bin/cni
t_is "man finds cni(1)" "$(man -w cni 2>/dev/null)" /usr/share/man/man1/cni.1.gz
t_is "dpkg owns the links" "$(dpkg -S /usr/libexec/cni/loopback 2>&1)" "cni: /usr/libexec/cni/loopback"

# A plugin call through the installed link, as podman would make it.
ns=$(t_netns deb)
OUT=$(echo '{"cniVersion":"1.1.0","name":"lo","type":"loopback"}' |
	CNI_COMMAND=ADD CNI_CONTAINERID=deb CNI_NETNS="$ns" CNI_IFNAME=lo \
	CNI_PATH=/usr/libexec/cni /usr/libexec/cni/loopback 2>&1)
t_json "/usr/libexec/cni/loopback ADD" '.interfaces[0].name' lo

# The Kubernetes example's init script, on this machine as on a node: a
# private mount namespace with a tmpfs /opt (so /opt/cni/bin is empty and
# the host's untouched) and the read-only root at /opt/host for its chroot.
script=$(python3 -c 'import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
print(d["spec"]["template"]["spec"]["initContainers"][0]["command"][2])' \
	/usr/share/doc/cni/examples/kubernetes-daemonset.yaml)
node() {
	unshare -m sh -c '
		set -e
		mount --make-rprivate /
		mount -t tmpfs none /opt
		mkdir -p /opt/cni/bin /opt/host
		[ -z "$2" ] || echo reference >/opt/cni/bin/bridge
		mount --rbind / /opt/host
		mount -o remount,bind,ro /opt/host
		set +e
		sh -ec "$1"
		echo "exit $?"
		echo "loopback: $(readlink /opt/cni/bin/loopback)"
		[ -L /opt/cni/bin/bridge ] || echo "bridge: $(cat /opt/cni/bin/bridge)"
		/opt/cni/bin/loopback --help >/dev/null 2>&1 && echo "loopback runs"
		' node "${script//chroot \/host /chroot /opt/host }" "${1-}"
}
out=$(node 2>&1)
t_like "the DaemonSet script installs cni" "$out" '^exit 0$.*^loopback: /opt/cni/bin/cni$.*^loopback runs$'
out=$(node with-reference 2>&1)
t_like "it fails on another plugin's file" "$out" 'bridge exists and is not a symlink.*^exit [1-9]'
t_like "... which stays" "$out" '^bridge: reference$'

t_ok "dpkg --purge cni" dpkg --purge cni
t_nok "the package is gone" dpkg-query -W -f='${Status}' cni
t_nok "/usr/bin/cni is gone" test -e /usr/bin/cni
t_nok "/usr/libexec/cni is gone" test -e /usr/libexec/cni
t_done
