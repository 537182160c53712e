package auth

import (
	"container/list"
	"sync"
)

// lru is a bounded map, least recently used entry out first, safe for
// concurrent use.
type lru[K comparable, V any] struct {
	mu    sync.Mutex
	max   int
	order *list.List // of *lruEntry[K, V], most recent first
	byKey map[K]*list.Element
}

type lruEntry[K comparable, V any] struct {
	k K
	v V
}

func newLRU[K comparable, V any](max int) lru[K, V] {
	return lru[K, V]{max: max, order: list.New(), byKey: map[K]*list.Element{}}
}

// get returns k's value and makes it the most recent.
func (c *lru[K, V]) get(k K) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	el, ok := c.byKey[k]
	if !ok {
		var zero V
		return zero, false
	}
	c.order.MoveToFront(el)
	return el.Value.(*lruEntry[K, V]).v, true
}

// add keeps v for k unless k is kept already, and returns the value kept.
func (c *lru[K, V]) add(k K, v V) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	if el, ok := c.byKey[k]; ok {
		return el.Value.(*lruEntry[K, V]).v
	}
	c.byKey[k] = c.order.PushFront(&lruEntry[K, V]{k: k, v: v})
	if c.order.Len() > c.max {
		old := c.order.Remove(c.order.Back()).(*lruEntry[K, V])
		delete(c.byKey, old.k)
	}
	return v
}
