package controller

import (
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// changesFirst is the storage of a controller's work queue
// (workqueue.TypedQueueConfig.Queue): keys queued because something changed
// are served before keys queued by an informer's resync. A resync queues
// every subject at once; in plain FIFO order a change that arrives just
// after it waits for the whole pass (at 10,000 sets, half a minute: see
// BENCHMARKS.md). client-go's queue keeps its own guarantees (a key is
// queued once, and never processed by two workers at once); this type only
// chooses which queued key comes next.
//
// A key is urgent when marked so (mark) before it is added: mark, then
// Add. Everything but a resync marks its keys.
type changesFirst struct {
	mu     sync.Mutex
	marked map[string]bool // keys whose next Push or Touch is urgent

	// The rest is called by the work queue under its own lock.
	high, low []string
	inLow     map[string]bool
	dead      map[string]int // entries of low moved to high, not yet skipped
	deadCount int
}

var _ workqueue.Queue[string] = (*changesFirst)(nil)

func newChangesFirst() *changesFirst {
	return &changesFirst{marked: map[string]bool{}, inLow: map[string]bool{}, dead: map[string]int{}}
}

// newQueue is a controller's work queue: client-go's, with the default
// controller rate limiter, over order, reporting to mp (the workqueue_*
// series under name; nil reports nothing).
func newQueue(name string, order *changesFirst, mp workqueue.MetricsProvider) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, MetricsProvider: mp,
			// The retries are the delaying queue's to count, the rest the
			// queue's: each takes the provider from its own config.
			DelayingQueue: workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[string]{
				Name: name, MetricsProvider: mp,
				Queue: workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: name, Queue: order, MetricsProvider: mp}),
			})},
	)
}

// mark makes key's next addition urgent.
func (q *changesFirst) mark(key string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.marked[key] = true
}

func (q *changesFirst) take(key string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.marked[key] {
		return false
	}
	delete(q.marked, key)
	return true
}

// Push queues a key that is not queued.
func (q *changesFirst) Push(key string) {
	if q.take(key) {
		q.high = append(q.high, key)
		return
	}
	q.low = append(q.low, key)
	q.inLow[key] = true
}

// Touch is a key added again while queued: if the addition is urgent and
// the key waits behind a resync, it moves ahead. Its old place is skipped
// when reached.
func (q *changesFirst) Touch(key string) {
	if !q.take(key) || !q.inLow[key] {
		return
	}
	delete(q.inLow, key)
	q.dead[key]++
	q.deadCount++
	q.high = append(q.high, key)
}

// Len is the number of queued keys.
func (q *changesFirst) Len() int { return len(q.high) + len(q.low) - q.deadCount }

// Pop returns the oldest urgent key, else the oldest other one. The work
// queue calls it only when Len is not 0.
func (q *changesFirst) Pop() string {
	if len(q.high) > 0 {
		key := q.high[0]
		q.high[0] = ""
		q.high = q.high[1:]
		return key
	}
	for {
		key := q.low[0]
		q.low[0] = ""
		q.low = q.low[1:]
		if q.dead[key] > 0 {
			// Moved ahead earlier; older entries of a key come first.
			if q.dead[key]--; q.dead[key] == 0 {
				delete(q.dead, key)
			}
			q.deadCount--
			continue
		}
		delete(q.inLow, key)
		return key
	}
}
