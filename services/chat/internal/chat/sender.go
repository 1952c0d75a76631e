package chat

// Sender is who sends a message, and how current the record of that user
// is. Send must judge a message by the user as the store holds it now (a
// ban, a timeout, a role change or a deletion applies at once), and a
// record read a moment ago by the same request is that; a record held
// since an earlier request is not.
//
//   - Fresh: read from the store by the request in hand (an HTTP request's
//     Authenticate, milliseconds earlier). Send uses it as is, and saves the
//     round trip of reading it again.
//   - Held: kept since an earlier authentication (a WebSocket session holds
//     its user for as long as it is open). Send reads the user again, in the
//     same round trip as its other reads, so a user deleted since is
//     Unauthorized and a ban or a role change applies.
//
// The zero Sender is held: a record of unknown age is always read again.
type Sender struct {
	user User
	age  recordAge
}

// recordAge says when a Sender's record was read.
type recordAge int

const (
	readEarlier     recordAge = iota // held since an earlier request: read again
	readThisRequest                  // read by the request in hand: current
)

// Fresh is a user read from the store by the request in hand (the result
// of Authenticate in the same HTTP request).
func Fresh(u User) Sender { return Sender{user: u, age: readThisRequest} }

// Held is a user kept since an earlier request, such as a WebSocket
// session's user: Send reads it again.
func Held(u User) Sender { return Sender{user: u, age: readEarlier} }

// current reports whether the record may be used without reading it again.
func (s Sender) current() bool { return s.age == readThisRequest }
