package deploy_test

import (
	"bytes"
	"debug/elf"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

// dockerfile is what the tests need to know of the Dockerfile.
type dockerfile struct {
	stages     []string          // the FROM images, in order
	args       map[string]string // ARG defaults
	buildEnv   []string          // KEY=VALUE before `go build`, ARGs expanded
	buildArgs  []string          // the arguments of `go`, ARGs expanded
	user       string
	entrypoint string
}

// readDockerfile parses the few instructions the image depends on. It
// understands what the Dockerfile uses: line continuations, ARG defaults,
// ${VAR} and ${VAR:-default}, and double-quoted words.
func readDockerfile(t *testing.T) dockerfile {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	text := strings.ReplaceAll(string(data), "\\\n", " ")
	d := dockerfile{args: map[string]string{}}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		instr, rest, _ := strings.Cut(line, " ")
		rest = strings.TrimSpace(rest)
		switch strings.ToUpper(instr) {
		case "FROM":
			d.stages = append(d.stages, strings.Fields(rest)[0])
		case "ARG":
			name, value, _ := strings.Cut(rest, "=")
			d.args[name] = value
		case "USER":
			d.user = rest
		case "ENTRYPOINT":
			d.entrypoint = rest
		case "RUN":
			words := shellWords(d.expand(rest))
			for i, w := range words {
				if w == "go" && i+1 < len(words) && words[i+1] == "build" {
					d.buildEnv, d.buildArgs = words[:i], words[i+1:]
				}
			}
		}
	}
	if d.buildArgs == nil {
		t.Fatal("the Dockerfile has no RUN ... go build")
	}
	return d
}

var argRef = regexp.MustCompile(`\$\{(\w+)(:-([^}]*))?\}`)

// expand replaces ${VAR} and ${VAR:-default} with the ARG defaults.
func (d dockerfile) expand(s string) string {
	return argRef.ReplaceAllStringFunc(s, func(ref string) string {
		m := argRef.FindStringSubmatch(ref)
		if v := d.args[m[1]]; v != "" {
			return v
		}
		return m[3]
	})
}

// shellWords splits s at blanks outside double quotes and drops the quotes.
func shellWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case (r == ' ' || r == '\t') && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

func TestTheDockerfileBuildsAStaticExampleAndRunsItAsNonRootOnDistroless(t *testing.T) {
	g := NewWithT(t)
	d := readDockerfile(t)
	g.Expect(d.stages).To(Equal([]string{"golang:1.26", "gcr.io/distroless/static:nonroot"}))
	g.Expect(d.args).To(HaveKeyWithValue("EXAMPLE", "minimal"))
	g.Expect(d.buildEnv).To(ContainElement("CGO_ENABLED=0"))
	g.Expect(d.buildArgs).To(ContainElements("-trimpath", "-ldflags=-s -w"))
	g.Expect(d.buildArgs[len(d.buildArgs)-1]).To(Equal("./examples/minimal"))
	g.Expect(d.buildArgs).To(ContainElements("-o", "manager"))
	g.Expect(d.user).To(Equal("65532:65532"))
	g.Expect(d.entrypoint).To(Equal(`["/manager"]`))
}

// buildLikeTheDockerfile builds the default example the way the image's
// build stage does: from a copy of the build context (the repository minus
// .dockerignore), with the Dockerfile's environment and arguments.
func buildLikeTheDockerfile(t *testing.T) string {
	t.Helper()
	d := readDockerfile(t)
	workspace := filepath.Join(t.TempDir(), "workspace")
	copyBuildContext(t, workspace)
	out := filepath.Join(t.TempDir(), "manager")
	args := append([]string(nil), d.buildArgs...)
	for i := range args {
		if i > 0 && args[i-1] == "-o" {
			args[i] = out
		}
	}
	cmd := exec.Command("go", args...)
	cmd.Dir = workspace
	cmd.Env = append(os.Environ(), d.buildEnv...)
	start := time.Now()
	if output, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, output)
	}
	t.Logf("built %s like the Dockerfile in %s", args[len(args)-1], time.Since(start).Round(time.Millisecond))
	return out
}

// copyBuildContext copies what `COPY . .` copies: the repository without
// what .dockerignore excludes. It knows the pattern forms .dockerignore
// uses: "dir/", "name", "*.ext" (at the top) and "**/pattern" (anywhere).
func copyBuildContext(t *testing.T, dst string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, ".dockerignore"))
	if err != nil {
		t.Fatal(err)
	}
	var patterns []string
	for _, line := range strings.Split(string(data), "\n") {
		if line = strings.TrimSpace(line); line != "" && !strings.HasPrefix(line, "#") {
			patterns = append(patterns, strings.TrimSuffix(line, "/"))
		}
	}
	ignored := func(rel string) bool {
		for _, p := range patterns {
			if sub, ok := strings.CutPrefix(p, "**/"); ok {
				if m, _ := filepath.Match(sub, filepath.Base(rel)); m {
					return true
				}
			} else if m, _ := filepath.Match(p, rel); m {
				return true
			}
		}
		return false
	}
	err = filepath.WalkDir(root, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, path)
		if rel == "." {
			return os.MkdirAll(dst, 0o755)
		}
		if ignored(rel) {
			if e.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !e.Type().IsRegular() {
			return nil
		}
		return copyFile(path, target)
	})
	if err != nil {
		t.Fatalf("copying the build context: %v", err)
	}
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close()
		return err
	}
	return out.Close()
}

func TestTheImageBinaryIsStaticAndStartsAndStops(t *testing.T) {
	g := NewWithT(t)
	bin := buildLikeTheDockerfile(t)

	// Static: no program interpreter (the dynamic loader) and no dynamic
	// section, so it runs on distroless/static, which has no libc.
	f, err := elf.Open(bin)
	g.Expect(err).NotTo(HaveOccurred())
	for _, p := range f.Progs {
		g.Expect(p.Type).NotTo(BeElementOf(elf.PT_INTERP, elf.PT_DYNAMIC), "program header %v: the binary is dynamically linked", p.Type)
	}
	g.Expect(f.Section(".interp")).To(BeNil())
	g.Expect(f.Close()).To(Succeed())

	// --help prints the flags the Deployment uses.
	help, _ := exec.Command(bin, "--help").CombinedOutput()
	for _, flag := range []string{"-leader-elect", "-health-probe-bind-address", "-metrics-bind-address", "-metrics-secure"} {
		g.Expect(string(help)).To(ContainSubstring(flag))
	}

	// Against a cluster it starts, answers the probes the Deployment
	// configures, serves metrics to authorized callers only, and exits 0 on
	// SIGTERM, as when a pod is stopped.
	cp := controlPlane(t)
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(cp.WriteKubeconfig(kubeconfig)).To(Succeed())
	probes, metrics := freePort(t), freePort(t)
	cmd := exec.Command(bin, "--health-probe-bind-address="+probes, "--metrics-bind-address="+metrics)
	cmd.Env = append(os.Environ(), "KUBECONFIG="+kubeconfig)
	output := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = output, output
	g.Expect(cmd.Start()).To(Succeed())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = cmd.Process.Kill()
			if err := <-exited; err != nil {
				t.Logf("operator exited: %v", err)
			}
		}
		if t.Failed() {
			t.Logf("operator output:\n%s", output.String())
		}
	})

	g.Eventually(output.String, 30*time.Second).Should(ContainSubstring("starting the operator"))
	for _, url := range []string{"http://" + probes + "/healthz", "http://" + probes + "/readyz"} {
		g.Eventually(func() (int, error) { return status(url) }, 30*time.Second).Should(Equal(http.StatusOK), url)
	}
	// Metrics are HTTPS by default, and a scrape without a token is refused.
	g.Eventually(func() (int, error) { code, _, err := scrape("https://"+metrics+"/metrics", ""); return code, err }, 30*time.Second).
		Should(Equal(http.StatusUnauthorized))

	g.Expect(cmd.Process.Signal(syscall.SIGTERM)).To(Succeed())
	select {
	case err := <-exited:
		stopped = true
		g.Expect(err).NotTo(HaveOccurred(), "exit after SIGTERM")
	case <-time.After(40 * time.Second):
		t.Fatal("the operator did not exit within 40 s of SIGTERM")
	}
}

// freePort returns 127.0.0.1:<a port nobody listens on right now>.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Close() }()
	return l.Addr().String()
}

func status(url string) (int, error) {
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Get(url)
	if err != nil {
		return 0, err
	}
	defer func() { _ = resp.Body.Close() }()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode, nil
}

// syncBuffer is a bytes.Buffer safe for a writing process and a reading
// test.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
