/* Replays corpus files (or directories of them) through a fuzz target and
 * reports each as a TAP line, so `meson test` keeps the corpus passing
 * without libFuzzer. A crash is the failure signal. */
#include <dirent.h>
#include <stdio.h>
#include <sys/stat.h>

#include "fuzz.h"
#include "util.h"

static int n;

static void one(const char *path)
{
	char *buf = NULL;
	size_t len = 0;
	if (read_file(path, 16u << 20, &buf, &len) < 0) {
		printf("not ok %d - %s (unreadable)\n", ++n, path);
		return;
	}
	LLVMFuzzerTestOneInput((const uint8_t *)buf, len);
	free(buf);
	printf("ok %d - %s\n", ++n, path);
}

static void walk(const char *path)
{
	struct stat st;
	if (stat(path, &st) < 0)
		return;
	if (!S_ISDIR(st.st_mode)) {
		one(path);
		return;
	}
	struct dirent **ents;
	int k = scandir(path, &ents, NULL, alphasort);
	for (int i = 0; i < k; i++) {
		if (ents[i]->d_name[0] != '.') {
			char *p = xasprintf("%s/%s", path, ents[i]->d_name);
			walk(p);
			free(p);
		}
		free(ents[i]);
	}
	free(ents);
}

int main(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		walk(argv[i]);
	printf("1..%d\n", n);
	return 0;
}
