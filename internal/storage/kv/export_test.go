package kv

// MemTableSize is memTableSize, for BenchmarkIngest (package kv_test).
const MemTableSize = memTableSize

// WithMemTable is s with badger's memtables of n bytes, for BenchmarkIngest.
func (s Settings) WithMemTable(n int64) Settings {
	s.memTable = n
	return s
}
