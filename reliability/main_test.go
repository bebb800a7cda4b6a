package reliability

import (
	"testing"

	"github.com/redisync/redisync/internal/testkit"
)

func TestMain(m *testing.M) { testkit.Main(m) }
