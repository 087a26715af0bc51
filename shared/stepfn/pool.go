package stepfn

import "time"

// workerIdle is how long, at least, an idle worker goroutine waits for more
// work (at most twice as long).
const workerIdle = 5 * time.Second

// job is work for a worker goroutine.
type job interface{ work() }

// spawn runs j on a goroutine, reusing an idle worker when there is one: the
// goroutines that run executions, branches and iterations keep their grown
// stacks, which makes short executions markedly cheaper.
func (e *Engine) spawn(j job) {
	select {
	case e.work <- j:
	default:
		go e.worker(j)
	}
}

func (e *Engine) worker(j job) {
	j.work()
	// The timer is not reset for every piece of work (that takes the
	// runtime's timer lock each time): when it fires, the worker exits if it
	// has had no work since it last fired, so after workerIdle to twice that.
	busy := false
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		select {
		case j := <-e.work:
			j.work()
			busy = true
		case <-t.C:
			if !busy {
				return
			}
			busy = false
			t.Reset(workerIdle)
		case <-e.quit:
			return
		}
	}
}
