package conversefake

import (
	"crypto/sha256"
	"sync"
	"time"
)

// promptCache keeps, per model, the hashes of the prefixes written at
// cache points (not the prompts), each until its TTL after its last use.
type promptCache struct {
	mu      sync.Mutex
	ttl     time.Duration
	expires map[cacheKey]time.Time
}

type cacheKey struct {
	model string
	hash  [sha256.Size]byte
}

// lookBack is how many blocks before a cache point a lookup checks for a
// prefix cached earlier, as Bedrock does for Claude (about 20).
const lookBack = 20

// use returns the tokens read from the cache (the longest cached prefix
// ending at a block within lookBack blocks before a cache point) and
// written to it (from there to the last cache point long enough to be
// cached), and caches the prefixes at the cache points.
func (c *promptCache) use(model string, p *prompt, minTokens int, now time.Time) (read, written int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for k, exp := range c.expires {
		if !now.Before(exp) {
			delete(c.expires, k)
		}
	}
	last := 0
	for _, at := range p.points {
		for k := at; k >= 0 && k >= at-lookBack; k-- {
			b := p.boundaries[k]
			if exp, ok := c.expires[cacheKey{model, b.hash}]; ok && now.Before(exp) && b.tokens >= minTokens {
				read = max(read, b.tokens)
				break
			}
		}
	}
	for _, at := range p.points {
		if b := p.boundaries[at]; b.tokens >= minTokens {
			last = max(last, b.tokens)
			c.expires[cacheKey{model, b.hash}] = now.Add(c.ttl)
		}
	}
	return read, max(last-read, 0)
}
