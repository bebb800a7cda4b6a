package core

import (
	"sync"
	"time"
)

// listings remembers when this client last listed itself among the clients of a lock that hands
// over (the clients record, see rlock_wake.lua), by the record's key: a try lists the client again
// only once half the linger has passed, whichever Lock value of that name it comes from.
type listings struct {
	mu sync.Mutex
	at map[string]time.Time
}

// listAgain reports whether a try on the object whose clients record is key must list this client
// again: it has not, or did more than every ago.
func (c *Client) listAgain(key string, every time.Duration) bool {
	l := &c.listings
	l.mu.Lock()
	defer l.mu.Unlock()
	at, ok := l.at[key]
	return !ok || time.Since(at) >= every
}

// listed notes that a try sent at sent listed this client in the clients record key. Listings
// older than every are forgotten as the map grows, so that it holds about the names in use.
func (c *Client) listed(key string, sent time.Time, every time.Duration) {
	l := &c.listings
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.at == nil {
		l.at = make(map[string]time.Time)
	}
	if len(l.at) >= 1024 && len(l.at)%1024 == 0 {
		for k, at := range l.at {
			if time.Since(at) >= every {
				delete(l.at, k)
			}
		}
	}
	if prev, ok := l.at[key]; !ok || sent.After(prev) {
		l.at[key] = sent
	}
}
