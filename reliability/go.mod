module github.com/redisync/redisync/reliability

go 1.25.0

require (
	github.com/anishathalye/porcupine v1.3.1
	github.com/redisync/redisync v0.0.0
)

require (
	github.com/alicebob/miniredis/v2 v2.40.0 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/redis/rueidis v1.0.79 // indirect
	github.com/stretchr/testify v1.10.0 // indirect
	github.com/yuin/gopher-lua v1.1.1 // indirect
	go.uber.org/goleak v1.3.0 // indirect
	golang.org/x/sys v0.47.0 // indirect
)

replace github.com/redisync/redisync => ../
