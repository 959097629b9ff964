package openaifake

import (
	"sync"
	"time"
)

const (
	// minCached is the shortest prompt the cache holds, and the least it
	// reports.
	minCached = 1024
	// maxCacheEntries bounds the cache whatever the traffic: past it,
	// expired entries are dropped, then any.
	maxCacheEntries = 1 << 20
)

// promptCache is OpenAI's prompt caching: it keeps, per model, the hashes
// of the cacheBlock-token prefixes of recent prompts (not the prompts),
// each until CacheTTL after its last use.
type promptCache struct {
	mu        sync.Mutex
	ttl       time.Duration
	expires   map[cacheKey]time.Time
	lastSweep time.Time
}

type cacheKey struct {
	model string
	hash  uint64
}

func newPromptCache(ttl time.Duration) *promptCache {
	return &promptCache{ttl: ttl, expires: map[cacheKey]time.Time{}}
}

// use looks up the longest cached prefix of a prompt and returns its
// tokens (a multiple of cacheBlock, at least minCached, or 0), then caches
// the prompt's prefixes when it is long enough to be cached.
func (c *promptCache) use(model string, promptTokens int, blocks []uint64, now time.Time) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sweep(now)
	hit := 0
	for hit < len(blocks) {
		exp, ok := c.expires[cacheKey{model, blocks[hit]}]
		if !ok || !now.Before(exp) {
			break
		}
		hit++
	}
	if promptTokens >= minCached {
		for _, b := range blocks {
			c.expires[cacheKey{model, b}] = now.Add(c.ttl)
		}
	}
	if cached := hit * cacheBlock; cached >= minCached {
		return cached
	}
	return 0
}

// sweep drops expired entries now and then, and any entries past
// maxCacheEntries.
func (c *promptCache) sweep(now time.Time) {
	if now.Sub(c.lastSweep) < c.ttl/2 && len(c.expires) < maxCacheEntries {
		return
	}
	c.lastSweep = now
	for k, exp := range c.expires {
		if !now.Before(exp) {
			delete(c.expires, k)
		}
	}
	for k := range c.expires {
		if len(c.expires) < maxCacheEntries {
			break
		}
		delete(c.expires, k)
	}
}
