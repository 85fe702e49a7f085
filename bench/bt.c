/* bt: the timer behind bench/run. Built by bench/run with cc, not by meson.
 *
 *   bt time [-o FILE] [-i FILE] CMD [ARG...]
 *	Run CMD once (stdin from -i FILE or /dev/null, stdout to -o FILE or
 *	/dev/null, stderr inherited) and print one line:
 *	    wall_us user_us sys_us maxrss_kb exit_status
 *	wall is CLOCK_MONOTONIC from just before posix_spawn to the return of
 *	wait4, so the shell driving the bench adds nothing to it; user, sys and
 *	maxrss are the child's own (wait4's rusage), its descendants included
 *	for user and sys.
 *
 *   bt stats
 *	Read numbers (one per line) on stdin, print "n min median max".
 *
 *   bt churn -j JOBS -n COUNT [-s START] -- CMD [ARG...]
 *	Run CMD COUNT times, at most JOBS at once. In the arguments "{}"
 *	becomes the job's index (START..START+COUNT-1, START defaults to 0)
 *	and "{+N}" the index plus N. Prints "wall_us failures". Each job's
 *	stdout goes to /dev/null, stderr is inherited.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long long now_us(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static long long tv_us(struct timeval tv)
{
	return tv.tv_sec * 1000000LL + tv.tv_usec;
}

static int spawn(char **argv, const char *in, const char *out, pid_t *pid)
{
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in ? in : "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out ? out : "/dev/null",
					 O_WRONLY | O_CREAT | O_TRUNC, 0644);
	int e = posix_spawnp(pid, argv[0], &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e) {
		fprintf(stderr, "bt: cannot run %s: %s\n", argv[0], strerror(e));
		return -1;
	}
	return 0;
}

static int cmd_time(int argc, char **argv)
{
	const char *in = NULL, *out = NULL;
	int i = 1;
	for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
		if (!strcmp(argv[i], "-o"))
			out = argv[i + 1];
		else if (!strcmp(argv[i], "-i"))
			in = argv[i + 1];
		else
			break;
	}
	if (i >= argc) {
		fprintf(stderr, "usage: bt time [-o FILE] [-i FILE] CMD [ARG...]\n");
		return 2;
	}
	pid_t pid;
	struct rusage ru;
	int status;
	long long t0 = now_us();
	if (spawn(argv + i, in, out, &pid) < 0)
		return 1;
	while (wait4(pid, &status, 0, &ru) < 0)
		if (errno != EINTR)
			return 1;
	long long wall = now_us() - t0;
	int rc = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	printf("%lld %lld %lld %ld %d\n", wall, tv_us(ru.ru_utime), tv_us(ru.ru_stime),
	       ru.ru_maxrss, rc);
	return 0;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static int cmd_stats(void)
{
	size_t n = 0, cap = 64;
	double *v = malloc(cap * sizeof(*v)), x;
	while (v && scanf("%lf", &x) == 1) {
		if (n == cap)
			v = realloc(v, (cap *= 2) * sizeof(*v));
		if (v)
			v[n++] = x;
	}
	if (!v || !n) {
		printf("0 0 0 0\n");
		return 0;
	}
	qsort(v, n, sizeof(*v), cmp_d);
	double med = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	printf("%zu %g %g %g\n", n, v[0], med, v[n - 1]);
	free(v);
	return 0;
}

/* One argument with "{}" and "{+N}" replaced (owned). */
static char *subst1(const char *s, int idx)
{
	size_t cap = strlen(s) + 64, n = 0;
	char *o = malloc(cap);
	while (o && *s) {
		char *end;
		long add = 0;
		if (s[0] == '{' && s[1] == '}') {
			s += 2;
		} else if (s[0] == '{' && s[1] == '+' && (add = strtol(s + 2, &end, 10), *end == '}')) {
			s = end + 1;
		} else {
			if (n + 2 >= cap)
				o = realloc(o, cap *= 2);
			if (o)
				o[n++] = *s++;
			continue;
		}
		if (n + 24 >= cap)
			o = realloc(o, cap *= 2);
		if (o)
			n += (size_t)snprintf(o + n, cap - n, "%ld", idx + add);
	}
	if (!o)
		abort();
	o[n] = 0;
	return o;
}

static char **subst(char **argv, int idx)
{
	size_t n = 0;
	while (argv[n])
		n++;
	char **v = calloc(n + 1, sizeof(*v));
	if (!v)
		abort();
	for (size_t i = 0; i < n; i++)
		v[i] = subst1(argv[i], idx);
	return v;
}

static void strv_free(char **v)
{
	for (char **p = v; *p; p++)
		free(*p);
	free(v);
}

static int cmd_churn(int argc, char **argv)
{
	int jobs = 1, count = 0, start = 0, i = 1;
	for (; i + 1 < argc && strcmp(argv[i], "--"); i += 2) {
		if (!strcmp(argv[i], "-j"))
			jobs = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-n"))
			count = atoi(argv[i + 1]);
		else if (!strcmp(argv[i], "-s"))
			start = atoi(argv[i + 1]);
	}
	if (i >= argc || strcmp(argv[i], "--") || jobs < 1 || count < 0) {
		fprintf(stderr, "usage: bt churn -j JOBS -n COUNT [-s START] -- CMD [ARG...]\n");
		return 2;
	}
	char **cmd = argv + i + 1;
	int next = 0, running = 0, failures = 0;
	long long t0 = now_us();
	while (next < count || running) {
		while (running < jobs && next < count) {
			char **v = subst(cmd, start + next++);
			pid_t pid;
			if (spawn(v, NULL, NULL, &pid) < 0)
				failures++;
			else
				running++;
			strv_free(v);
		}
		int status;
		pid_t p = wait(&status);
		if (p < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		running--;
		if (!WIFEXITED(status) || WEXITSTATUS(status))
			failures++;
	}
	printf("%lld %d\n", now_us() - t0, failures);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "time"))
		return cmd_time(argc - 1, argv + 1);
	if (argc > 1 && !strcmp(argv[1], "stats"))
		return cmd_stats();
	if (argc > 1 && !strcmp(argv[1], "churn"))
		return cmd_churn(argc - 1, argv + 1);
	fprintf(stderr, "usage: bt time|stats|churn ... (see bench/bt.c)\n");
	return 2;
}
