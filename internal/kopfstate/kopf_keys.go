package kopfstate

import (
	"encoding/base64"
	"encoding/binary"
	"math/bits"
	"strings"
	"time"
)

// Kopf's names for what it keeps on objects. Kopf forms the annotation key
// of a handler id in two ways ("v1" and "v2" keys); it writes both when
// they differ and reads whichever it finds first, v2 before v1, and so does
// gopf.

// kopfNameLimit is the longest name part of an annotation key (after the
// Prefix) that Kubernetes accepts.
const kopfNameLimit = 63

// kopfKeys returns the annotation keys under which Kopf keeps the record of
// id: the v2 key, then the v1 key if it differs. replicaSetOfDeployment
// marks the keys of a ReplicaSet owned by a Deployment, whose annotations
// Kubernetes overwrites with the Deployment's: Kopf adds "-ofDRS" there.
func kopfKeys(prefix, id string, replicaSetOfDeployment bool) []string {
	if replicaSetOfDeployment {
		id += "-ofDRS"
	}
	v2, v1 := kopfKeyV2(prefix, id), kopfKeyV1(prefix, id)
	if v1 == v2 {
		return []string{v2}
	}
	return []string{v2, v1}
}

// kopfSafeName replaces what annotation names may not contain the way
// Kopf does: "/" becomes ".", "<" and ">" become "_".
func kopfSafeName(id string) string {
	return strings.NewReplacer("/", ".", "<", "_", ">", "_").Replace(id)
}

// kopfKeyV2 limits the name part to 63 characters: a longer id is cut and
// ends with a hash of the whole id.
func kopfKeyV2(prefix, id string) string {
	suffix := ""
	if runeLen(id) > kopfNameLimit {
		suffix = kopfHashSuffix(id)
	}
	return prefix + "/" + pyPrefix(kopfSafeName(id), max(0, kopfNameLimit-len(suffix))) + suffix
}

// kopfKeyV1 is the older form, which limits the whole key, prefix
// included, to 63 characters and hashes the mangled id.
func kopfKeyV1(prefix, id string) string {
	safe := kopfSafeName(id)
	head := prefix + "/"
	suffix := ""
	if runeLen(safe) > kopfNameLimit-runeLen(head) {
		suffix = kopfHashSuffix(safe)
	}
	return head + pyPrefix(safe, kopfNameLimit-runeLen(head)-len(suffix)) + suffix
}

// kopfHashSuffix is "-" and the base64 (with "-" and "." for "+" and "/")
// of a 4-byte BLAKE2b digest of key, without trailing "=", "-" or ".".
func kopfHashSuffix(key string) string {
	digest := blake2b32([]byte(key))
	encoded := strings.NewReplacer("+", "-", "/", ".").Replace(base64.StdEncoding.EncodeToString(digest[:]))
	return strings.TrimRight("-"+encoded, "=-.")
}

// pyPrefix is Python's s[:n]: the first n characters, and for a negative n
// all but the last -n.
func pyPrefix(s string, n int) string {
	r := []rune(s)
	if n < 0 {
		n = max(0, len(r)+n)
	}
	if n > len(r) {
		n = len(r)
	}
	return string(r[:n])
}

func runeLen(s string) int { return len([]rune(s)) }

// Kopf writes times as Python's isoformat() of an aware UTC time:
// microseconds (left out when zero) and "+00:00". Older releases wrote
// naive UTC times, without the offset.
const (
	kopfTimeLayout      = "2006-01-02T15:04:05.000000-07:00"
	kopfTimeLayoutWhole = "2006-01-02T15:04:05-07:00"
)

// formatKopfTime writes t as Kopf does.
func formatKopfTime(t time.Time) string {
	t = t.UTC().Truncate(time.Microsecond)
	if t.Nanosecond() == 0 {
		return t.Format(kopfTimeLayoutWhole)
	}
	return t.Format(kopfTimeLayout)
}

// ParseTime reads a time Kopf wrote, with or without an offset (none
// means UTC).
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err == nil {
		return t.UTC(), nil
	}
	if naive, err2 := time.Parse("2006-01-02T15:04:05.999999999", s); err2 == nil {
		return naive.UTC(), nil
	}
	return time.Time{}, err
}

// blake2b32 is BLAKE2b (RFC 7693) with a 4-byte digest and no key, the hash
// Kopf shortens long annotation names with. The standard library has no
// BLAKE2b and four bytes of it do not justify a dependency.
func blake2b32(data []byte) [4]byte {
	const size = 4
	h := blake2bIV
	h[0] ^= 0x01010000 ^ size
	var counter uint64
	for len(data) > 128 {
		counter += 128
		blake2bCompress(&h, data[:128], counter, false)
		data = data[128:]
	}
	var last [128]byte
	copy(last[:], data)
	counter += uint64(len(data))
	blake2bCompress(&h, last[:], counter, true)
	var out [8]byte
	binary.LittleEndian.PutUint64(out[:], h[0])
	return [4]byte(out[:size])
}

var blake2bIV = [8]uint64{
	0x6a09e667f3bcc908, 0xbb67ae8584caa73b, 0x3c6ef372fe94f82b, 0xa54ff53a5f1d36f1,
	0x510e527fade682d1, 0x9b05688c2b3e6c1f, 0x1f83d9abfb41bd6b, 0x5be0cd19137e2179,
}

var blake2bSigma = [10][16]byte{
	{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15},
	{14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
	{11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4},
	{7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
	{9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13},
	{2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
	{12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11},
	{13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
	{6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5},
	{10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
}

// blake2bCompress is BLAKE2b's function F on one 128-byte block; counter is
// the number of bytes hashed so far, this block included.
func blake2bCompress(h *[8]uint64, block []byte, counter uint64, final bool) {
	var m [16]uint64
	for i := range m {
		m[i] = binary.LittleEndian.Uint64(block[i*8:])
	}
	var v [16]uint64
	copy(v[:8], h[:])
	copy(v[8:], blake2bIV[:])
	v[12] ^= counter // the high word of the counter stays 0 below 2^64 bytes
	if final {
		v[14] = ^v[14]
	}
	g := func(a, b, c, d int, x, y uint64) {
		v[a] += v[b] + x
		v[d] = bits.RotateLeft64(v[d]^v[a], -32)
		v[c] += v[d]
		v[b] = bits.RotateLeft64(v[b]^v[c], -24)
		v[a] += v[b] + y
		v[d] = bits.RotateLeft64(v[d]^v[a], -16)
		v[c] += v[d]
		v[b] = bits.RotateLeft64(v[b]^v[c], -63)
	}
	for round := 0; round < 12; round++ {
		s := &blake2bSigma[round%10]
		g(0, 4, 8, 12, m[s[0]], m[s[1]])
		g(1, 5, 9, 13, m[s[2]], m[s[3]])
		g(2, 6, 10, 14, m[s[4]], m[s[5]])
		g(3, 7, 11, 15, m[s[6]], m[s[7]])
		g(0, 5, 10, 15, m[s[8]], m[s[9]])
		g(1, 6, 11, 12, m[s[10]], m[s[11]])
		g(2, 7, 8, 13, m[s[12]], m[s[13]])
		g(3, 4, 9, 14, m[s[14]], m[s[15]])
	}
	for i := range h {
		h[i] ^= v[i] ^ v[i+8]
	}
}
