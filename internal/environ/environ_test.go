package environ

import (
	"net/http"
	"testing"
)

func TestParseAndFirst(t *testing.T) {
	env := Parse([]string{"A=1", "=nameless", "B=", "A=2", "NOEQUALS", "C=x=y"})
	if env["A"] != "2" || env["C"] != "x=y" {
		t.Errorf("Parse = %v; want the last A and values with '='", env)
	}
	if _, ok := env[""]; ok {
		t.Error("an entry without a name was kept")
	}
	if got := env.First("B", "MISSING", "C", "A"); got != "x=y" {
		t.Errorf("First = %q; want the first non-empty (C)", got)
	}
	if got := env.First("MISSING"); got != "" {
		t.Errorf("First of unset = %q", got)
	}
}

func TestProxy(t *testing.T) {
	env := Parse([]string{"https_proxy=http://proxy.example:3128", "NO_PROXY=internal.example"})
	proxy := env.Proxy()
	for target, want := range map[string]string{
		"https://registry.example/v2/": "http://proxy.example:3128",
		"https://internal.example/x":   "",
	} {
		req, err := http.NewRequest(http.MethodGet, target, nil)
		if err != nil {
			t.Fatal(err)
		}
		u, err := proxy(req)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if u != nil {
			got = u.String()
		}
		if got != want {
			t.Errorf("proxy for %s = %q; want %q", target, got, want)
		}
	}
}

func TestList(t *testing.T) {
	env := Parse([]string{"B=2", "A=1", "B=3"})
	got := env.List()
	if len(got) != 2 || got[0] != "A=1" || got[1] != "B=3" {
		t.Errorf("List = %q; want [A=1 B=3]", got)
	}
}
