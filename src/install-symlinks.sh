#!/bin/sh
# meson install hook for -Dinstall_symlinks=DIR, run as
#   install-symlinks.sh BUILT-CNI DIR TARGET
# The built binary makes the links because only it knows which applets get
# one. They go under $DESTDIR (absolute, set by meson when staging) but name
# TARGET, the binary's path once the staged tree is unpacked; TARGET need not
# exist yet, hence --target rather than /proc/self/exe.
set -eu
bin=$1 dir=$2 target=$3
[ -n "${MESON_INSTALL_QUIET-}" ] || echo "Installing applet symlinks to ${DESTDIR-}$dir -> $target"
"$bin" --install "${DESTDIR-}$dir" --target "$target" || {
	echo "install-symlinks: cni --install failed; if $dir holds another package's" \
		"plugins, remove them or run: cni --install $dir --force" >&2
	exit 1
}
