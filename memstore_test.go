package management

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"sync"
	"time"
)

// memStore is an in-memory SharedStore for tests of the fleet's protocol
// (the behaviour on a real Redis is tested in redisstore). It keeps time
// with time.Now, so that in a synctest bubble entries expire on the fake
// clock. hook, when set, runs before each operation (op is "get", "set",
// "delete", "trylock" or "unlock") and may block, ignoring ctx as a hung
// network client would, or fail it.
type memStore struct {
	mu      sync.Mutex
	entries map[string]memEntry
	calls   map[string]int // operations per key
	hook    func(ctx context.Context, op, key string) error
}

type memEntry struct {
	value   []byte
	expires time.Time
}

func newMemStore() *memStore {
	return &memStore{entries: map[string]memEntry{}, calls: map[string]int{}}
}

func (s *memStore) before(ctx context.Context, op, key string) error {
	s.mu.Lock()
	s.calls[key]++
	hook := s.hook
	s.mu.Unlock()
	if hook != nil {
		return hook(ctx, op, key)
	}
	return nil
}

// get returns key's live entry; s.mu is held.
func (s *memStore) get(key string) ([]byte, bool) {
	e, ok := s.entries[key]
	if !ok || !time.Now().Before(e.expires) {
		return nil, false
	}
	return e.value, true
}

func (s *memStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := s.before(ctx, "get", key); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	v, _ := s.get(key)
	return v, nil
}

func (s *memStore) Set(ctx context.Context, key string, value []byte, ttl time.Duration) error {
	if err := s.before(ctx, "set", key); err != nil {
		return err
	}
	s.put(key, value, ttl)
	return nil
}

// put stores value under key for ttl, as a test arranging the store does.
func (s *memStore) put(key string, value []byte, ttl time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.entries[key] = memEntry{value: append([]byte(nil), value...), expires: time.Now().Add(ttl)}
}

func (s *memStore) Delete(ctx context.Context, key string) error {
	if err := s.before(ctx, "delete", key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.entries, key)
	return nil
}

func (s *memStore) TryLock(ctx context.Context, key string, ttl time.Duration) (func(context.Context) error, bool, error) {
	if err := s.before(ctx, "trylock", key); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, held := s.get(key); held {
		return nil, false, nil
	}
	id := []byte(rand.Text())
	s.entries[key] = memEntry{value: id, expires: time.Now().Add(ttl)}
	return func(ctx context.Context) error {
		if err := s.before(ctx, "unlock", key); err != nil {
			return err
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		if v, ok := s.get(key); ok && string(v) == string(id) {
			delete(s.entries, key)
		}
		return nil
	}, true, nil
}

// setHook sets hook while the store is in use.
func (s *memStore) setHook(hook func(ctx context.Context, op, key string) error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.hook = hook
}

// keys returns the keys of the live entries.
func (s *memStore) keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var keys []string
	for k := range s.entries {
		if _, ok := s.get(k); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// callsTo returns the operations made on keys containing part.
func (s *memStore) callsTo(part string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for k, c := range s.calls {
		if strings.Contains(k, part) {
			n += c
		}
	}
	return n
}

// resetCalls forgets the operations counted so far.
func (s *memStore) resetCalls() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.calls)
}

// squat holds the lease key for ttl, as a replica
// killed mid-refresh (or whoever can write the store) leaves them.
func (s *memStore) squat(key string, ttl time.Duration) {
	s.put(key, []byte("squatter-"+hex.EncodeToString([]byte(key))[:8]), ttl)
}
