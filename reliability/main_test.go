package reliability

import (
	"os"
	"testing"

	"github.com/redisync/redisync/internal/testkit"
)

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperEnv); addr != "" {
		os.Exit(runHolder(addr)) // the test binary re-executed as a paused holder
	}
	testkit.Main(m)
}
