package task

import (
	"fmt"
	"os/user"
	"strconv"
)

// User is an OS user a task's processes run as: a tenant's user on the
// worker.
type User struct {
	Name     string
	UID, GID uint32
	// Groups are the user's supplementary groups.
	Groups []uint32
	Home   string
}

// UnknownUserError is the error of an OS user that does not exist on this
// machine.
type UnknownUserError struct {
	// Name is the user asked for.
	Name string
}

// Error implements error.
func (e *UnknownUserError) Error() string {
	return fmt.Sprintf("there is no OS user %q on this machine", e.Name)
}

// LookupUser returns the OS user called name, with its groups; a user that
// does not exist is an *UnknownUserError.
func LookupUser(name string) (*User, error) {
	u, err := user.Lookup(name)
	if _, ok := err.(user.UnknownUserError); ok {
		return nil, &UnknownUserError{Name: name}
	}
	if err != nil {
		return nil, fmt.Errorf("look up OS user %q: %w", name, err)
	}
	uid, err1 := strconv.ParseUint(u.Uid, 10, 32)
	gid, err2 := strconv.ParseUint(u.Gid, 10, 32)
	if err1 != nil || err2 != nil {
		return nil, fmt.Errorf("OS user %q: ids %s:%s are not numbers", name, u.Uid, u.Gid)
	}
	out := &User{Name: u.Username, UID: uint32(uid), GID: uint32(gid), Home: u.HomeDir}
	gids, err := u.GroupIds()
	if err != nil {
		return nil, fmt.Errorf("OS user %q: groups: %w", name, err)
	}
	for _, g := range gids {
		if n, err := strconv.ParseUint(g, 10, 32); err == nil {
			out.Groups = append(out.Groups, uint32(n))
		}
	}
	return out, nil
}
