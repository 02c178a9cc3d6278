package protocol

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// Limits on what Decode holds in memory. Skipped values cost nothing
// whatever their size.
const (
	// MaxKeptFile is the largest universe entry Decode keeps, encoded.
	MaxKeptFile = 8 << 20
	// maxField is the largest value of any other request field, encoded.
	maxField = 16 << 20
	// maxKey is the longest object key (a field name or a file path).
	maxKey = 64 << 10
	// maxDepth is the deepest nesting of arrays and objects Decode accepts.
	maxDepth = 512
)

// Decode reads one request from r, keeping the universe entries whose path
// keep accepts and skipping the others without holding them: memory use is
// bounded by the kept entries, not by the request's size. The fields may
// come in any order. Trailing data after the request is ignored.
func Decode(r io.Reader, keep func(path string) bool) (*Request, error) {
	d := &decoder{r: bufio.NewReaderSize(r, 64<<10)}
	req := &Request{Universe: map[string]string{}, Present: map[string]bool{}}
	if err := d.request(req, keep); err != nil {
		return nil, fmt.Errorf("reading the request at byte %d: %w", d.off, err)
	}
	return req, nil
}

// decoder is a minimal streaming JSON reader: it reads the request's
// top-level object and its universe key by key, and either copies a value
// (to decode it with encoding/json) or skips it byte by byte.
type decoder struct {
	r   *bufio.Reader
	off int64 // bytes consumed so far, for messages
}

func (d *decoder) request(req *Request, keep func(string) bool) error {
	return d.object(func(key string) error {
		switch key {
		case "universe":
			return d.universe(req, keep)
		case "apiVersion", "command", "args", "pluginChain", "config":
			raw, err := d.value(maxField)
			if err != nil {
				return fmt.Errorf("field %q: %w", key, err)
			}
			if err := unmarshalField(req, key, raw); err != nil {
				return fmt.Errorf("field %q: %w", key, err)
			}
			return nil
		default:
			return d.skip()
		}
	})
}

func unmarshalField(req *Request, key string, raw []byte) error {
	if bytes.Equal(raw, []byte("null")) {
		return nil
	}
	switch key {
	case "apiVersion":
		return json.Unmarshal(raw, &req.APIVersion)
	case "command":
		return json.Unmarshal(raw, &req.Command)
	case "args":
		return json.Unmarshal(raw, &req.Args)
	case "pluginChain":
		return json.Unmarshal(raw, &req.PluginChain)
	default:
		req.Config = &Config{}
		return json.Unmarshal(raw, req.Config)
	}
}

func (d *decoder) universe(req *Request, keep func(string) bool) error {
	if ok, err := d.null(); ok || err != nil {
		return err
	}
	return d.object(func(path string) error {
		req.Present[path] = true
		if keep(path) {
			raw, err := d.value(MaxKeptFile)
			if errors.Is(err, errTooLarge) {
				return fmt.Errorf("universe entry %q is larger than %d MiB, too large to edit", path, MaxKeptFile>>20)
			}
			if err != nil {
				return fmt.Errorf("universe entry %q: %w", path, err)
			}
			var content string
			if err := json.Unmarshal(raw, &content); err != nil {
				return fmt.Errorf("universe entry %q: %w", path, err)
			}
			req.Universe[path] = content
			return nil
		}
		if _, err := d.peekNonSpace(); err != nil {
			return fmt.Errorf("universe entry %q: %w", path, err)
		}
		start := d.off
		if err := d.skip(); err != nil {
			return fmt.Errorf("universe entry %q: %w", path, err)
		}
		req.Skipped++
		req.SkippedBytes += d.off - start
		return nil
	})
}

// object reads an object, calling member for each key with the reader
// positioned at the key's value, which member must consume.
func (d *decoder) object(member func(key string) error) error {
	if err := d.expect('{'); err != nil {
		return err
	}
	c, err := d.peekNonSpace()
	if err != nil {
		return err
	}
	if c == '}' {
		return d.advance(1)
	}
	for {
		var key bytes.Buffer
		if err := d.str(&key, maxKey); err != nil {
			return fmt.Errorf("object key: %w", err)
		}
		var name string
		if err := json.Unmarshal(key.Bytes(), &name); err != nil {
			return fmt.Errorf("object key: %w", err)
		}
		if err := d.expect(':'); err != nil {
			return err
		}
		if err := member(name); err != nil {
			return err
		}
		c, err := d.nextNonSpace()
		if err != nil {
			return err
		}
		switch c {
		case ',':
		case '}':
			return nil
		default:
			return fmt.Errorf("want ',' or '}' after an object member, got %q", c)
		}
	}
}

// null consumes a JSON null if one comes next.
func (d *decoder) null() (bool, error) {
	c, err := d.peekNonSpace()
	if err != nil || c != 'n' {
		return false, err
	}
	var buf bytes.Buffer
	if err := d.scan(&buf, 8, 0); err != nil {
		return false, err
	}
	if buf.String() != "null" {
		return false, fmt.Errorf("invalid literal %q", buf.String())
	}
	return true, nil
}

var errTooLarge = errors.New("value too large")

// value copies the next value, at most limit bytes of it.
func (d *decoder) value(limit int) ([]byte, error) {
	var buf bytes.Buffer
	if err := d.scan(&buf, limit, 0); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// skip consumes the next value without keeping it.
func (d *decoder) skip() error { return d.scan(nil, 0, 0) }

// scan consumes the next value, appending its bytes to buf unless buf is
// nil. It checks the value as encoding/json would, skipped or not, so that
// a malformed request is an error wherever the fault is.
func (d *decoder) scan(buf *bytes.Buffer, limit, depth int) error {
	if depth > maxDepth {
		return errors.New("nested too deeply")
	}
	c, err := d.peekNonSpace()
	if err != nil {
		return err
	}
	switch c {
	case '"':
		return d.str(buf, limit)
	case '{', '[':
		return d.container(buf, limit, depth, c)
	default:
		return d.literal(buf, limit)
	}
}

// container consumes an object (opening is '{') or an array (opening is
// '['), as scan does; depth is its own.
func (d *decoder) container(buf *bytes.Buffer, limit, depth int, opening byte) error {
	closing := byte('}')
	if opening == '[' {
		closing = ']'
	}
	if err := d.take(buf, limit); err != nil {
		return err
	}
	if next, err := d.peekNonSpace(); err != nil {
		return err
	} else if next == closing {
		return d.take(buf, limit)
	}
	for {
		if opening == '{' {
			if err := d.memberKey(buf, limit); err != nil {
				return err
			}
		}
		if err := d.scan(buf, limit, depth+1); err != nil {
			return err
		}
		sep, err := d.nextNonSpace()
		if err != nil {
			return err
		}
		if err := d.put(buf, limit, sep); err != nil {
			return err
		}
		if sep == closing {
			return nil
		}
		if sep != ',' {
			return fmt.Errorf("want ',' or %q, got %q", closing, sep)
		}
	}
}

// memberKey consumes an object member's key and the colon after it.
func (d *decoder) memberKey(buf *bytes.Buffer, limit int) error {
	if err := d.str(buf, limit); err != nil {
		return err
	}
	if err := d.expect(':'); err != nil {
		return err
	}
	return d.put(buf, limit, ':')
}

// literal consumes a number or a literal (true, false, null): everything up
// to the next delimiter.
func (d *decoder) literal(buf *bytes.Buffer, limit int) error {
	var tok token
	for {
		c, err := d.peek()
		if err == io.EOF && tok.n > 0 {
			break
		}
		if err != nil {
			return err
		}
		if isDelimiter(c) {
			if tok.n == 0 {
				return fmt.Errorf("unexpected %q", c)
			}
			break
		}
		if !tok.next(c) {
			return fmt.Errorf("invalid literal or number: unexpected %q", c)
		}
		if err := d.take(buf, limit); err != nil {
			return err
		}
	}
	if !tok.complete() {
		return errors.New("invalid literal or number: cut short")
	}
	return nil
}

// token follows a number or a literal (true, false, null) a byte at a time,
// so that checking one holds nothing.
type token struct {
	word  string // the literal, once its first byte names one
	n     int    // bytes seen
	state int    // where in a number: one of the num constants
}

// Where a number is: after its sign, its integer part (a lone zero or
// digits), its dot, its fraction, its "e", the exponent's sign, or the
// exponent.
const (
	numStart = iota
	numMinus
	numZero
	numInt
	numDot
	numFrac
	numE
	numExpSign
	numExp
)

// next reports whether c may follow the bytes seen so far.
func (t *token) next(c byte) bool {
	if t.n == 0 {
		t.word = literalStartingWith(c)
	}
	t.n++
	if t.word != "" {
		return t.n <= len(t.word) && c == t.word[t.n-1]
	}
	state, ok := numNext(t.state, c)
	t.state = state
	return ok
}

// literalStartingWith names the literal whose first byte is c, or returns
// "" when c starts none (and so must start a number).
func literalStartingWith(c byte) string {
	switch c {
	case 't':
		return "true"
	case 'f':
		return "false"
	case 'n':
		return "null"
	}
	return ""
}

// numNext returns where in a number the byte c leads from state, and false
// (with state unchanged) when c cannot come next.
func numNext(state int, c byte) (int, bool) {
	switch {
	case '0' <= c && c <= '9':
		return digitNext(state, c)
	case c == '-' && state == numStart:
		return numMinus, true
	case (c == '+' || c == '-') && state == numE:
		return numExpSign, true
	case c == '.' && (state == numZero || state == numInt):
		return numDot, true
	case (c == 'e' || c == 'E') && (state == numZero || state == numInt || state == numFrac):
		return numE, true
	}
	return state, false
}

// digitNext returns where in a number the digit c leads from state, and
// false (with state unchanged) after a leading zero, which JSON allows no
// more digits after.
func digitNext(state int, c byte) (int, bool) {
	switch state {
	case numStart, numMinus:
		if c == '0' {
			return numZero, true
		}
		return numInt, true
	case numInt:
		return numInt, true
	case numDot, numFrac:
		return numFrac, true
	case numE, numExpSign, numExp:
		return numExp, true
	}
	return state, false
}

// complete reports whether the bytes seen make a whole number or literal.
func (t *token) complete() bool {
	if t.word != "" {
		return t.n == len(t.word)
	}
	return t.state == numZero || t.state == numInt || t.state == numFrac || t.state == numExp
}

// str consumes a string, quotes included, copying it to buf unless buf is
// nil. It checks the string as encoding/json would (no control characters,
// only JSON's escapes) and works a buffer at a time, so that skipping a
// large string holds nothing however many escapes it has.
func (d *decoder) str(buf *bytes.Buffer, limit int) error {
	c, err := d.peekNonSpace()
	if err != nil {
		return err
	}
	if c != '"' {
		return fmt.Errorf("want a string, got %q", c)
	}
	if err := d.take(buf, limit); err != nil {
		return err
	}
	// Escapes may straddle buffers: escaped is set after a backslash, hex
	// counts the digits of \uXXXX still to come.
	escaped, hex := false, 0
	for {
		chunk, err := d.buffered()
		if err != nil {
			return unexpectedEOF(err)
		}
		for i := 0; i < len(chunk); i++ {
			c := chunk[i]
			if hex == 0 && !escaped && !special[c] {
				continue
			}
			switch {
			case c < 0x20:
				return d.failAt(i, fmt.Errorf("invalid character %q in a string", c))
			case hex > 0:
				if !isHex(c) {
					return d.failAt(i, fmt.Errorf("invalid character %q in a \\u escape", c))
				}
				hex--
			case escaped:
				escaped = false
				switch c {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					hex = 4
				default:
					return d.failAt(i, fmt.Errorf("invalid escape %q in a string", []byte{'\\', c}))
				}
			case c == '\\':
				escaped = true
			case c == '"': // the closing quote
				return d.copyN(buf, limit, chunk[:i+1])
			}
		}
		if err := d.copyN(buf, limit, chunk); err != nil {
			return err
		}
	}
}

// failAt consumes the n buffered bytes before a fault, so that the error
// names the fault's offset however the input was buffered, and returns err.
func (d *decoder) failAt(n int, err error) error {
	_ = d.advance(n)
	return err
}

// special marks the bytes str must look at in a string: the closing
// quote, the backslash and control characters.
var special = func() (t [256]bool) {
	for c := range 0x20 {
		t[c] = true
	}
	t['"'], t['\\'] = true, true
	return t
}()

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// buffered returns the bytes buffered so far, reading more when there are
// none. The slice is valid until the next read.
func (d *decoder) buffered() ([]byte, error) {
	if d.r.Buffered() == 0 {
		if _, err := d.r.Peek(1); err != nil {
			return nil, err
		}
	}
	return d.r.Peek(d.r.Buffered())
}

// copyN appends chunk (a prefix of the buffered bytes) to buf and consumes it.
func (d *decoder) copyN(buf *bytes.Buffer, limit int, chunk []byte) error {
	if buf != nil {
		if buf.Len()+len(chunk) > limit {
			return errTooLarge
		}
		buf.Write(chunk)
	}
	return d.advance(len(chunk))
}

// take consumes one byte, copying it to buf unless buf is nil.
func (d *decoder) take(buf *bytes.Buffer, limit int) error {
	c, err := d.r.ReadByte()
	if err != nil {
		return unexpectedEOF(err)
	}
	d.off++
	return d.put(buf, limit, c)
}

// put appends c to buf unless buf is nil.
func (d *decoder) put(buf *bytes.Buffer, limit int, c byte) error {
	if buf == nil {
		return nil
	}
	if buf.Len() >= limit {
		return errTooLarge
	}
	return buf.WriteByte(c)
}

func (d *decoder) advance(n int) error {
	m, err := d.r.Discard(n)
	d.off += int64(m)
	return err
}

func (d *decoder) peek() (byte, error) {
	b, err := d.r.Peek(1)
	if err != nil {
		return 0, err
	}
	return b[0], nil
}

// peekNonSpace skips white space and returns the next byte without
// consuming it.
func (d *decoder) peekNonSpace() (byte, error) {
	for {
		c, err := d.peek()
		if err != nil {
			return 0, unexpectedEOF(err)
		}
		if !isSpace(c) {
			return c, nil
		}
		if err := d.advance(1); err != nil {
			return 0, err
		}
	}
}

// nextNonSpace skips white space and consumes the next byte.
func (d *decoder) nextNonSpace() (byte, error) {
	c, err := d.peekNonSpace()
	if err != nil {
		return 0, err
	}
	return c, d.advance(1)
}

func (d *decoder) expect(want byte) error {
	c, err := d.nextNonSpace()
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("want %q, got %q", want, c)
	}
	return nil
}

func isSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isDelimiter(c byte) bool {
	return isSpace(c) || c == ',' || c == '}' || c == ']' || c == ':' || c == '"' || c == '{' || c == '['
}

func unexpectedEOF(err error) error {
	if err == io.EOF {
		return io.ErrUnexpectedEOF
	}
	return err
}
