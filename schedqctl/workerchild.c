/*-------------------------------------------------------------------------
 * schedqctl/workerchild.c
 *	  Starting and supervising the program of each task.
 *
 *	  Here are its process, its input and output, its end, and what its
 *	  output becomes.
 *
 *	  The command is looked up as execvp looks it up before the worker
 *	  claims anything and before each claim (ctl_workerchild_runnable), and
 *	  a program that cannot be executed says so to the worker through a
 *	  close-on-exec pipe: either is the worker's fault, not the task's
 *	  (workerclaim.c gives the task back).
 *
 *	  Each program runs in its own process group (so that killing it kills
 *	  whatever it started), with default signal handling, the payload on
 *	  stdin and SCHEDQ_TASK_ID, SCHEDQ_ATTEMPT, SCHEDQ_KIND, SCHEDQ_QUEUE
 *	  and SCHEDQ_RUN_ID in its environment.  The payload is an unlinked
 *	  temporary file (in TMPDIR, else /tmp), so that a program that does
 *	  not read it never blocks us.  Its stdout and stderr are
 *	  non-blocking pipes the poll loop reads: stdout is kept up to
 *	  schedq.max_payload (and one byte more, to know it was passed), and
 *	  the last ERR_TAIL bytes of stderr (the server's limit for an error
 *	  is 64 kB).
 *
 *	  What the output becomes: stdout is the task's result if it is one
 *	  JSON value jsonb takes (text.c decides), else {"stdout": "..."},
 *	  cut to fit with "truncated" and "stdout_bytes" if it was too long;
 *	  no result if it is empty.  The tail of stderr, after a prefix saying
 *	  how the program ended, is the error of a failed attempt.
 *-------------------------------------------------------------------------
 */
#include "postgres_fe.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/logging.h"
#include "worker.h"

/*
 * The payload in an unlinked temporary file, positioned at its start: the
 * program's stdin.  Returns the descriptor, or -1 with errbuf saying why.
 */
static int
payload_file(const char *payload, char *errbuf, size_t errlen)
{
	const char *tmpdir = getenv("TMPDIR");
	char	   *path;
	int			fd;
	size_t		len = strlen(payload);

	path = psprintf("%s/schedqctl.XXXXXX", tmpdir && *tmpdir ? tmpdir : "/tmp");
	fd = mkstemp(path);
	if (fd < 0)
	{
		snprintf(errbuf, errlen, "could not create a temporary file: %m");
		pg_free(path);
		return -1;
	}
	unlink(path);
	pg_free(path);
	for (size_t off = 0; off < len;)
	{
		ssize_t n = write(fd, payload + off, len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
		{
			snprintf(errbuf, errlen, "could not write the payload: %m");
			close(fd);
			return -1;
		}
		off += n;
	}
	lseek(fd, 0, SEEK_SET);
	return fd;
}

/*
 * Whether path names a file this process may execute: a regular file
 * with execute permission.  Says why not, as errno would (ENOENT also
 * for a path that cannot be looked at).
 */
static bool
child_executable(const char *path, int *err)
{
	struct stat st;

	if (stat(path, &st) != 0)
	{
		*err = errno == EACCES ? ENOENT : errno;
		return false;
	}
	if (!S_ISREG(st.st_mode))
	{
		*err = S_ISDIR(st.st_mode) ? EISDIR : EACCES;
		return false;
	}
	if (access(path, X_OK) != 0)
	{
		*err = errno;
		return false;
	}
	return true;
}

/*
 * Whether the worker's command can be run: found as execvp finds it (a
 * name with a slash is a path; another is looked up in each directory of
 * PATH, or of /bin:/usr/bin without PATH, an empty entry meaning the
 * current directory) and executable.  Says why not: for a name looked up,
 * the first file of that name that is there but cannot be executed, or
 * that none is in PATH.  Checked before the worker claims anything, and
 * before each claim, so that a command that cannot run never fails a
 * task.
 */
bool
ctl_workerchild_runnable(Worker *w, char *why, size_t len)
{
	const char *name = w->cmd[0];
	const char *path;
	char	   *copy;
	int			err;
	bool		found = false;

	if (name[0] == '\0')
	{
		snprintf(why, len, "the command is empty");
		return false;
	}
	if (strchr(name, '/') != NULL)
	{
		if (child_executable(name, &err))
			return true;
		snprintf(why, len, "%s", strerror(err));
		return false;
	}
	path = getenv("PATH");
	copy = pg_strdup(path ? path : "/bin:/usr/bin");
	snprintf(why, len, "not found in PATH");
	for (char *dir = copy, *next; dir != NULL && !found; dir = next)
	{
		char *candidate;
		bool  first = strcmp(why, "not found in PATH") == 0;

		next = strchr(dir, ':');
		if (next)
			*next++ = '\0';
		candidate = psprintf("%s%s%s", dir, dir[0] ? "/" : "", name);
		found = child_executable(candidate, &err);
		/* As execvp: one that is there but cannot run says more. */
		if (!found && err != ENOENT && err != ENOTDIR && first)
			snprintf(why, len, "%s: %s", candidate, strerror(err));
		pg_free(candidate);
	}
	pg_free(copy);
	return found;
}

/*
 * In the child after fork: its own process group, default signals, the
 * payload and the pipes as stdin, stdout and stderr, the task in the
 * environment; then the command.  If it cannot be executed, errno goes
 * to the parent through exec_fd (close-on-exec: closed by a successful
 * exec).  Never returns.
 */
static void
child_exec(Worker *w, Slot *s, int in_fd, const int outp[2], const int errp[2],
		   int exec_fd, const char *run_id)
{
	int err;

	sigset_t none;

	setpgid(0, 0);
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	dup2(in_fd, STDIN_FILENO);
	dup2(outp[1], STDOUT_FILENO);
	dup2(errp[1], STDERR_FILENO);
	close(in_fd);
	close(outp[0]);
	close(outp[1]);
	close(errp[0]);
	close(errp[1]);
	setenv("SCHEDQ_TASK_ID", s->id, 1);
	setenv("SCHEDQ_ATTEMPT", s->attempt, 1);
	setenv("SCHEDQ_KIND", s->kind, 1);
	setenv("SCHEDQ_QUEUE", s->queue, 1);
	setenv("SCHEDQ_RUN_ID", run_id, 1);
	execvp(w->cmd[0], w->cmd);
	err = errno;
	if (write(exec_fd, &err, sizeof(err)) != sizeof(err))
	{
		/* The parent sees an exit status of 127 instead. */
	}
	_exit(127);
}

/*
 * After fork: whether the child executed the command, or the errno of its
 * failure (*err), read from the pipe it closes by executing.
 */
static bool
child_executed(int exec_fd, int *err)
{
	ssize_t n;

	do
		n = read(exec_fd, err, sizeof(*err));
	while (n < 0 && errno == EINTR);
	return n != (ssize_t) sizeof(*err);
}

/*
 * Start the program for the task claimed into slot s.  Returns false, with
 * errbuf saying why and s->not_run the exit code of the worker's fault, if
 * it could not be started: EXIT_USAGE if the command could not be
 * executed, EXIT_ERROR if the system refused a resource (a file, a pipe,
 * a process).
 */
bool
ctl_workerchild_start(Worker *w, Slot *s, const char *payload,
					  const char *run_id, char *errbuf, size_t errlen)
{
	int	  outp[2];
	int	  errp[2];
	int	  execp[2];
	int	  in_fd;
	int	  err;
	pid_t pid;

	s->not_run = EXIT_ERROR;
	in_fd = payload_file(payload, errbuf, errlen);
	if (in_fd < 0)
		return false;
	if (pipe(outp) < 0)
	{
		snprintf(errbuf, errlen, "could not create a pipe: %m");
		close(in_fd);
		return false;
	}
	if (pipe(errp) < 0)
	{
		snprintf(errbuf, errlen, "could not create a pipe: %m");
		close(in_fd);
		close(outp[0]);
		close(outp[1]);
		return false;
	}
	if (pipe2(execp, O_CLOEXEC) < 0)
	{
		snprintf(errbuf, errlen, "could not create a pipe: %m");
		close(in_fd);
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		return false;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0)
	{
		snprintf(errbuf, errlen, "could not fork: %m");
		close(in_fd);
		close(outp[0]);
		close(outp[1]);
		close(errp[0]);
		close(errp[1]);
		close(execp[0]);
		close(execp[1]);
		return false;
	}
	if (pid == 0)
		child_exec(w, s, in_fd, outp, errp, execp[1], run_id);
	/* Both sides set the group, so a kill right after fork finds it. */
	setpgid(pid, pid);
	close(in_fd);
	close(outp[1]);
	close(errp[1]);
	close(execp[1]);
	if (!child_executed(execp[0], &err))
	{
		snprintf(errbuf, errlen, "could not run \"%s\": %s", w->cmd[0],
				 strerror(err));
		close(execp[0]);
		close(outp[0]);
		close(errp[0]);
		/* It exits at once; reaped here, not by the loop. */
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		s->not_run = EXIT_USAGE;
		return false;
	}
	close(execp[0]);
	s->not_run = 0;
	ctl_worker_nonblock_cloexec(outp[0]);
	ctl_worker_nonblock_cloexec(errp[0]);
	s->pid = pid;
	s->out_fd = outp[0];
	s->err_fd = errp[0];
	return true;
}

/*
 * Read what a program's stdout (is_out) or stderr pipe has; at EOF close
 * it.  Keeps what the header says.
 */
void
ctl_workerchild_read(Worker *w, Slot *s, bool is_out)
{
	char chunk[16384];
	int *fd = is_out ? &s->out_fd : &s->err_fd;

	while (*fd >= 0)
	{
		ssize_t n = read(*fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return; /* EAGAIN: nothing more now */
		if (n == 0)
		{
			close(*fd);
			*fd = -1;
			return;
		}
		if (is_out)
		{
			/* Keep one byte past the limit, to know it was passed. */
			size_t room = w->max_result + 1 > s->out.len ?
							  w->max_result + 1 - s->out.len :
							  0;

			appendBinaryPQExpBuffer(&s->out, chunk,
									(size_t) n < room ? (size_t) n : room);
			ctl_text_check(&s->out);
			s->out_total += n;
		}
		else
		{
			appendBinaryPQExpBuffer(&s->err, chunk, n);
			ctl_text_check(&s->err);
			if (s->err.len > 2 * ERR_TAIL)
			{
				memmove(s->err.data, s->err.data + s->err.len - ERR_TAIL,
						ERR_TAIL);
				s->err.len = ERR_TAIL;
				s->err.data[s->err.len] = '\0';
			}
		}
	}
}

/* Read what every program's pipes have. */
void
ctl_workerchild_read_all(Worker *w)
{
	for (int i = 0; i < w->concurrency; i++)
	{
		Slot *s = &w->slots[i];

		if (s->used && (s->out_fd >= 0 || s->err_fd >= 0))
		{
			ctl_workerchild_read(w, s, true);
			ctl_workerchild_read(w, s, false);
		}
	}
}

/* Add the open pipes of every program to the poll set. */
void
ctl_workerchild_add_fds(Worker *w, struct pollfd *fds, int *nfds)
{
	for (int i = 0; i < w->concurrency; i++)
	{
		Slot *s = &w->slots[i];

		if (!s->used)
			continue;
		if (s->out_fd >= 0)
		{
			fds[*nfds].fd = s->out_fd;
			fds[(*nfds)++].events = POLLIN;
		}
		if (s->err_fd >= 0)
		{
			fds[*nfds].fd = s->err_fd;
			fds[(*nfds)++].events = POLLIN;
		}
	}
}

/* Reap the programs that exited into their slots, with their output. */
void
ctl_workerchild_reap(Worker *w)
{
	pid_t pid;
	int	  status;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0)
	{
		for (int i = 0; i < w->concurrency; i++)
		{
			Slot *s = &w->slots[i];

			if (s->used && s->pid == pid)
			{
				s->wstatus = status;
				s->pid = 0;
				/* What it wrote before it exited is in the pipes: drain. */
				ctl_workerchild_read(w, s, true);
				ctl_workerchild_read(w, s, false);
				break;
			}
		}
	}
}

/* Kill a slot's process group (once, for the first reason). */
void
ctl_workerchild_kill(Slot *s, SlotKill why)
{
	if (s->pid > 0 && s->killed == KILL_NONE)
	{
		s->killed = why;
		kill(-s->pid, SIGKILL);
	}
}

/* Kill every running program's process group, before the worker exits. */
void
ctl_workerchild_kill_all(Worker *w)
{
	for (int i = 0; i < w->concurrency; i++)
		if (w->slots[i].used && w->slots[i].pid > 0)
			kill(-w->slots[i].pid, SIGKILL);
}

/* Did the program of a finished slot end so that the task is done? */
bool
ctl_workerchild_done(const Slot *s)
{
	return s->not_run == 0 && s->killed == KILL_NONE && WIFEXITED(s->wstatus) &&
		   WEXITSTATUS(s->wstatus) == 0;
}

/*
 * The result of a program's stdout, at most max_out bytes of it, as the
 * header says; NULL for none.  A new allocation.
 */
char *
ctl_workerchild_result(Slot *s, size_t max_out)
{
	PQExpBufferData b;
	size_t			used;

	if (s->out_total == 0)
		return NULL;
	if (s->out_total <= max_out && ctl_text_json_valid(s->out.data, s->out.len))
		return pg_strdup(s->out.data);
	initPQExpBuffer(&b);
	appendPQExpBufferStr(&b, "{\"stdout\": ");
	ctl_text_json_string(&b, s->out.data,
						 s->out.len > max_out ? max_out : s->out.len,
						 max_out > 200 ? max_out - 200 : 0, &used);
	if (used < s->out_total)
		appendPQExpBuffer(&b, ", \"truncated\": true, \"stdout_bytes\": %zu",
						  s->out_total);
	appendPQExpBufferChar(&b, '}');
	ctl_text_check(&b);
	return b.data;
}

/* The tail of stderr after prefix, made fit for a text value. */
char *
ctl_workerchild_error(Slot *s, const char *prefix)
{
	PQExpBufferData b;
	size_t			start = s->err.len > ERR_TAIL ? s->err.len - ERR_TAIL : 0;

	initPQExpBuffer(&b);
	appendPQExpBufferStr(&b, prefix);
	if (s->err.len > start)
	{
		appendPQExpBufferStr(&b, ": ");
		appendBinaryPQExpBuffer(&b, s->err.data + start, s->err.len - start);
	}
	ctl_text_check(&b);
	ctl_text_sanitize(b.data, b.len);
	/* Trailing newlines say nothing in last_error. */
	while (b.len > 0 && b.data[b.len - 1] == '\n')
		b.data[--b.len] = '\0';
	return b.data;
}

/* Free a slot whose program has ended and been reported. */
void
ctl_workerchild_free(Worker *w, Slot *s)
{
	if (s->out_fd >= 0)
		close(s->out_fd);
	if (s->err_fd >= 0)
		close(s->err_fd);
	pg_free(s->id);
	pg_free(s->attempt);
	pg_free(s->queue);
	pg_free(s->kind);
	pg_free(s->token);
	termPQExpBuffer(&s->out);
	termPQExpBuffer(&s->err);
	memset(s, 0, sizeof(*s));
	s->out_fd = s->err_fd = -1;
	w->running--;
	w->want_claim = true;
}
