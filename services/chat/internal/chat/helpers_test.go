package chat

import "errors"

type errString string

func (e errString) Error() string { return string(e) }

func errorsIs(err, target error) bool { return errors.Is(err, target) }
