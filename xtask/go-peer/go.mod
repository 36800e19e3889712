module asynq-rs/xtask/go-peer

go 1.24.0

require (
	github.com/hibiken/asynq v0.26.0
	github.com/redis/go-redis/v9 v9.14.1
)
