package server_test

import (
	"strings"
	"testing"

	"github.com/zkraft/zkraft/server"
)

// FuzzParseZooCfg feeds arbitrary text to the zoo.cfg parser: it never
// panics, and what it accepts it accepts again the same way.
func FuzzParseZooCfg(f *testing.F) {
	for _, seed := range []string{
		"tickTime=2000\ninitLimit=10\nsyncLimit=5\ndataDir=/var/lib/zookeeper\nclientPort=2181\n",
		"clientPort = 2182\nclientPortAddress: 0.0.0.0\nmaxClientCnxns 0\n4lw.commands.whitelist=srvr, ruok,\\\n  mntr\n",
		"server.1=127.0.0.1:2888:3888\nserver.2=127.0.0.1:2889:3889:observer;2182\nserver.3=h:1:2:participant;0.0.0.0:2183\n",
		"jute.maxbuffer=0x200000\nextendedTypesEnabled=true\nreconfigEnabled=true\nreadonlymode.enabled=true\n",
		"minSessionTimeout=-1\nmaxSessionTimeout=90000\nsnapCount=100\nautopurge.snapRetainCount=3\n",
		"server.1=[::1]:2888:3888\n# comment\n! bang comment\nkey\\ with\\ space=value\n",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, text string) {
		cfg, unknown, err := server.ParseZooCfg(strings.NewReader(text))
		cfg2, unknown2, err2 := server.ParseZooCfg(strings.NewReader(text))
		if (err == nil) != (err2 == nil) || len(unknown) != len(unknown2) {
			t.Fatalf("parsing the same text twice differs: %v / %v", err, err2)
		}
		if err == nil && len(cfg.Servers) != len(cfg2.Servers) {
			t.Fatalf("parsing the same text twice gives %d then %d servers", len(cfg.Servers), len(cfg2.Servers))
		}
	})
}
