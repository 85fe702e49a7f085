/* The only main(): dispatch on argv[0]'s basename (a symlink named after an
 * applet), else on the first argument (`cni bridge` is exactly a `bridge`
 * symlink). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>

#include "applet.h"
#include "caps.h"
#include "config.h"
#include "plugin.h"

static void list_applets(FILE *f, bool with_summary)
{
	for (size_t i = 0; i < cni_applets_count; i++) {
		const struct cni_applet *a = cni_applets[i];
		if (with_summary)
			fprintf(f, "  %-12s %s\n", a->name, a->summary);
		else
			fprintf(f, "%s\n", a->name);
	}
}

static void usage(FILE *f)
{
	fprintf(f,
		"cni %s - every CNI plugin in one binary (CNI spec %s)\n\n"
		"Usage:\n"
		"  APPLET                     run as a plugin through a symlink named APPLET\n"
		"  cni APPLET [ARGS]          the same without a symlink\n"
		"  cni --install DIR [--target PATH] [--force]\n"
		"                             create DIR/APPLET symlinks for every applet\n"
		"  cni --list                 list the applets\n"
		"  cni --version | --help\n\n"
		"Applets:\n",
		CNI_PROGRAM_VERSION, CNI_SPEC_VERSION);
	list_applets(f, true);
	fprintf(f, "\nSee cni(1) and cni-APPLET(8).\n");
}

/* Create DIR/name -> target for every applet; an existing symlink is
 * replaced atomically, anything else is refused unless force. The target is
 * the running binary unless given: a package build stages the links under
 * DESTDIR, where they must name the path the binary will have once unpacked,
 * which need not exist yet. */
static int install(const char *dir, const char *target, bool force)
{
	char self[PATH_MAX];
	if (!target) {
		ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
		if (n < 0) {
			fprintf(stderr, "cni: cannot resolve own path: %m\n");
			return 1;
		}
		self[n] = 0;
		target = self;
	}
	if (mkdir_p(dir, 0755) < 0) {
		fprintf(stderr, "cni: cannot create %s: %m\n", dir);
		return 1;
	}
	int rc = 0;
	for (size_t i = 0; i < cni_applets_count; i++) {
		const char *name = cni_applets[i]->name;
		if (cni_applets[i]->flags & APPLET_NOLINK)
			continue;
		_cleanup_free_ char *path = xasprintf("%s/%s", dir, name);
		_cleanup_free_ char *tmp = xasprintf("%s/.%s.cni-tmp", dir, name);
		struct stat st;
		if (lstat(path, &st) == 0 && !S_ISLNK(st.st_mode) && !force) {
			fprintf(stderr, "cni: %s exists and is not a symlink (use --force)\n", path);
			rc = 1;
			continue;
		}
		unlink(tmp);
		if (symlink(target, tmp) < 0 || rename(tmp, path) < 0) {
			fprintf(stderr, "cni: cannot create %s: %m\n", path);
			unlink(tmp);
			rc = 1;
		}
	}
	return rc;
}

static int run(const struct cni_applet *a, int argc, char **argv)
{
	return a->main ? a->main(argc, argv) : plugin_main(a, argc, argv);
}

int main(int argc, char **argv)
{
	_cleanup_free_ char *arg0 = xstrdup(argc > 0 ? argv[0] : "cni");
	const struct cni_applet *a = applet_find(basename(arg0));
	if (a)
		return run(a, argc, argv);

	if (argc < 2 || streq(argv[1], "--help") || streq(argv[1], "-h")) {
		caps_drop_all();
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	if (streq(argv[1], "--version")) {
		caps_drop_all();
		printf("cni %s (CNI spec %s)\n", CNI_PROGRAM_VERSION, CNI_SPEC_VERSION);
		return 0;
	}
	if (streq(argv[1], "--list")) {
		caps_drop_all();
		list_applets(stdout, false);
		return 0;
	}
	if (streq(argv[1], "--install")) {
		const char *target = NULL;
		bool force = false;
		int i = 3;
		for (; i < argc; i++) {
			if (streq(argv[i], "--force"))
				force = true;
			else if (streq(argv[i], "--target") && i + 1 < argc && argv[i + 1][0])
				target = argv[++i];
			else
				break;
		}
		if (argc < 3 || i < argc) {
			fprintf(stderr, "usage: cni --install DIR [--target PATH] [--force]\n");
			return 2;
		}
		return install(argv[2], target, force);
	}
	a = applet_find(argv[1]);
	if (!a) {
		fprintf(stderr, "cni: unknown applet '%s'. Applets:\n", argv[1]);
		list_applets(stderr, true);
		return 2;
	}
	return run(a, argc - 1, argv + 1);
}
