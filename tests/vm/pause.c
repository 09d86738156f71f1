/* pause: a pod sandbox's first process for the VM tests' local pause image
 * (tests/vm/oci.sh builds it with gcc -static at test time: no registry).
 * Sleeps (pause(), as sigsuspend: no stop signal is lost between the
 * check and the sleep) until SIGTERM or SIGINT, then exits 0; reaps the
 * children that are reparented to it (it is PID 1 of a pod's PID
 * namespace). */
#include <signal.h>
#include <stddef.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t done;

static void on_stop(int sig)
{
	(void)sig;
	done = 1;
}

static void on_child(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

int main(void)
{
	struct sigaction stop = { .sa_handler = on_stop };
	struct sigaction child = { .sa_handler = on_child, .sa_flags = SA_NOCLDSTOP | SA_RESTART };

	sigset_t stops, old;

	sigemptyset(&stops);
	sigaddset(&stops, SIGTERM);
	sigaddset(&stops, SIGINT);
	sigprocmask(SIG_BLOCK, &stops, &old);
	sigaction(SIGTERM, &stop, NULL);
	sigaction(SIGINT, &stop, NULL);
	sigaction(SIGCHLD, &child, NULL);
	while (!done)
		sigsuspend(&old);
	return 0;
}
