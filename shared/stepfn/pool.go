package stepfn

import "time"

// workerIdle is how long an idle worker goroutine waits for more work.
const workerIdle = 5 * time.Second

// spawn runs fn on a goroutine, reusing an idle worker when there is one: the
// goroutines that run executions, branches and iterations keep their grown
// stacks, which makes short executions markedly cheaper.
func (e *Engine) spawn(fn func()) {
	select {
	case e.work <- fn:
	default:
		go e.worker(fn)
	}
}

func (e *Engine) worker(fn func()) {
	fn()
	t := time.NewTimer(workerIdle)
	defer t.Stop()
	for {
		select {
		case fn := <-e.work:
			fn()
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(workerIdle)
		case <-t.C:
			return
		case <-e.quit:
			return
		}
	}
}
