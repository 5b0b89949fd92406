// Ctrl-C: the first SIGINT asks the run to stop at the next safe point (between steps, or while
// waiting for the data loader), so that loader threads are joined and finished files stay intact;
// a second SIGINT kills the process at once, as usual. A process started with SIGINT ignored
// (nohup, a background job of a script) keeps ignoring it.
#pragma once

#include <signal.h>

#include <string>

namespace dptrain::core {

void install_interrupt_handler();
bool interrupt_requested();
// Throws Error(kInterrupted) naming `where` when an interrupt has been requested.
void throw_if_interrupted(const std::string& where);
// A scheduler's preemption notice: SIGTERM (SLURM, Kubernetes, `kill`) or SIGUSR1 (SLURM's
// --signal=USR1@seconds). The run finishes its current step, writes a checkpoint and exits with
// status 75. Repeated signals change nothing; SIGKILL remains the way to stop it at once.
void install_preemption_handler();
bool preemption_requested();
std::string preemption_signal_name();  // "SIGTERM" or "SIGUSR1", once requested

// The signals dptrain's launcher holds blocked in the ranks it starts, from before their exec until
// they can act on them: a Ctrl-C or preemption notice forwarded while a rank is still loading
// LibTorch must not kill it with the default action (143 reads as a crash). Ranks release them
// once their handlers are installed (train: to its signals' thread alone, below) or where the
// default action is what they want (every other command); a pending one is then delivered.
void launcher_held_signals(sigset_t& set);  // fills `set` with them
// main's first act, for a process started by anyone else (srun, torchrun, a shell): the notice
// of a scheduler that comes while dptrain starts waits for the handlers in the same way. The
// dynamic loader's work before main (LibTorch's, about half a second) is beyond any handler: the
// batch scripts count a death by SIGTERM or SIGUSR1 as a preemption (scripts/slurm/).
void hold_launcher_signals();
void release_launcher_signals();

// Training's way to release them: the handlers run on a thread of their own, which runs nothing
// else, and every other thread keeps the signals blocked. oneDNN's generated GEMM kernels point
// rsp at a heap workspace while they run (oneDNN issue 4845, reproduced on 3.11.1 and fixed
// after it by PR 4855; Debian's LibTorch 1.13 carries an older oneDNN), and the kernel pushes a
// signal's frame, a kilobyte or more, below rsp: a handler that interrupted one wrote into the
// heap, and glibc aborted soon after ("corrupted size vs. prev_size" after a preemption notice).
// Returns once a notice that came while the process started has run its handler. Call it before
// the process starts threads of its own: only threads started later inherit the blocked
// signals, and one that a library started before main (a BLAS's pool in its constructor, none
// with Debian's LibTorch) could still take them. Blocking system calls on the other threads are
// no longer cut short by a signal; the flags are polled. A signal sent to one thread
// (tgkill, pthread_kill) stays pending there, unseen, unless that thread is the signals' own;
// kill, srun and every launcher send theirs to the process. Other signals with handlers (a
// sampling profiler's SIGPROF) meet the same oneDNN kernels: none of dptrain's own.
void take_signals_on_own_thread();
inline constexpr const char* kSignalThreadName = "dptrain-signals";

// Forgets a request and arms the handler, even where SIGINT was ignored (tests that interrupt
// themselves).
void clear_interrupt();

}  // namespace dptrain::core
