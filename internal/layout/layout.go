// Package layout is the data each primitive keeps in Redis, one file per primitive: the keys beside
// its name, its channels, the fields of its hashes, and the records the library keeps beside
// Redisson's layout (waiter records, listening clients, grant marks, memos). The primitives' specs
// and the command-line tool (inspect, list) take their names from here, and the Lua scripts (lua/)
// read and write the same data: a change of layout is made here and in the scripts, and nowhere else.
// Redisson's names are kept byte for byte, so that Go and Java processes meet on the same name.
//
// A key or channel beside an object's name N is given by its form, in Redisson's naming
// (RedissonObject.prefixName and suffixName; core.Names builds them, keeping N's hash slot on a
// cluster): "prefix" stands for "prefix:{N}", "prefix:" for "prefix:{N}:" (a channel prefix that an
// owner or client id completes), ":suffix" for "{N}:suffix", and ":" for "{N}:" (a key prefix). A
// name that holds a '{' already gets no braces of its own. The object's main key is N itself.
package layout

// Memo is the form of the prefix of a call's memos, which every primitive keeps:
// "redisync_once:{N}:<request id>", a string with a short TTL that a call sent again after a lost
// answer reads to learn what its first send did (core/once.go, lua/once.lua).
const Memo = "redisync_once:"

// SideKeys are the prefix forms of every key that a primitive keeps beside its name ("prefix:{N}"):
// a key of one of these forms is never an object's main key, however its content looks.
var SideKeys = []string{
	Lock.Counter, Lock.Waiters, Lock.Clients, Lock.UnlockLatch,
	FairLock.Queue, FairLock.Deadlines, FairLock.Records,
	RWLock.Writers,
	Semaphore.Waiters, Semaphore.Clients, Semaphore.Grants,
}
