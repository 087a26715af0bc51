package stepfn

import "time"

// workerIdle is how long, at least, the engine spawns no work before its idle
// worker goroutines exit (at most twice as long).
const workerIdle = 5 * time.Second

// job is work for a worker goroutine.
type job interface{ work() }

// spawn runs j on a goroutine, reusing an idle worker when there is one: the
// goroutines that run executions, branches and iterations keep their grown
// stacks, which makes short executions markedly cheaper.
func (e *Engine) spawn(j job) {
	if !e.spawned.Load() {
		e.spawned.Store(true)
	}
	select {
	case e.work <- j:
	default:
		e.workers.Add(1)
		if e.trimming.CompareAndSwap(false, true) {
			go e.trim()
		}
		go e.worker(j)
	}
}

// worker runs j, then whatever work it is handed, until it is handed nil (see
// trim and Close) or finds the engine closed. An idle worker waits on the
// work channel alone: a select on a second one (or a timer) would queue it
// on both at every wait.
func (e *Engine) worker(j job) {
	defer e.workers.Add(-1)
	for j != nil {
		j.work()
		if e.stopping.Load() {
			return
		}
		j = <-e.work
	}
}

// endWorkers hands every idle worker a nil job until none is left: Close
// runs it once the engine stops, since a worker may park just after it
// found the engine open. It waits a little longer each time it finds none
// idle.
func (e *Engine) endWorkers() {
	wait := 10 * time.Microsecond
	for e.workers.Load() > 0 {
		select {
		case e.work <- nil:
			continue
		default:
		}
		time.Sleep(wait)
		wait = min(2*wait, 100*time.Millisecond)
	}
}

// trim ends the idle workers once the engine has spawned no work for
// workerIdle: it hands each a nil job. It runs while there are workers, so an
// engine never closed keeps no goroutine once its workers are gone.
func (e *Engine) trim() {
	t := time.NewTicker(workerIdle)
	defer t.Stop()
	for {
		select {
		case <-t.C:
		case <-e.quit:
			e.trimming.Store(false)
			return
		}
		if e.spawned.Swap(false) {
			continue
		}
	drain:
		for {
			select {
			case e.work <- nil:
			default:
				break drain
			}
		}
		if e.workers.Load() > 0 {
			continue
		}
		// No worker left: stop, unless a spawn started one meanwhile and
		// found this trimmer still running.
		e.trimming.Store(false)
		if e.workers.Load() == 0 || !e.trimming.CompareAndSwap(false, true) {
			return
		}
	}
}
