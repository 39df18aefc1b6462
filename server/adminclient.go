package server

import (
	"encoding/json"
	"errors"
	"strings"
	"syscall"

	"github.com/nlemu/nlemu/rtnl"
)

// AdminError is a refused administration request: the errno and the
// server's one-line reason.
type AdminError struct {
	Errno syscall.Errno
	Msg   string
}

func (e *AdminError) Error() string { return e.Msg }

// admin sends one administration request and returns the data replies
// (for LIST and STATS), concatenated, once the NLMSG_ERROR arrives.
func (cl *Client) admin(typ uint16, payload []byte) ([]byte, error) {
	if err := cl.Send(rtnl.AppendMessage(nil, typ, rtnl.NLM_F_REQUEST, 1, 0, payload)); err != nil {
		return nil, err
	}
	var data []byte
	for {
		b, err := cl.Recv()
		if err != nil {
			return nil, err
		}
		for _, m := range rtnl.SplitDatagram(b) {
			switch uint16(m.Header.Type) {
			case typ:
				// NETNS_LIST may come in several messages.
				data = append(data, m.Data...)
			case rtnl.NLMSG_ERROR:
				a, ok := rtnl.ParseAck(&m)
				if !ok {
					return nil, errors.New("nlemu: short reply")
				}
				if a.Err.Errno == 0 {
					return data, nil
				}
				return nil, &AdminError{Errno: a.Err.Errno, Msg: a.Err.Msg}
			}
		}
	}
}

// NetnsAdd creates a namespace on the server.
func (cl *Client) NetnsAdd(name string) error {
	_, err := cl.admin(rtnl.NLEMU_NETNS_ADD, append([]byte(name), 0))
	return err
}

// NetnsDel deletes a namespace on the server.
func (cl *Client) NetnsDel(name string) error {
	_, err := cl.admin(rtnl.NLEMU_NETNS_DEL, append([]byte(name), 0))
	return err
}

// NetnsList lists the server's namespaces.
func (cl *Client) NetnsList() ([]string, error) {
	b, err := cl.admin(rtnl.NLEMU_NETNS_LIST, nil)
	if err != nil {
		return nil, err
	}
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\x00"), nil
}

// NetnsEphemeral lists the server's ephemeral namespaces: those made by
// a HELLO with Options.Ephemeral, deleted when their last socket closes.
func (cl *Client) NetnsEphemeral() ([]string, error) {
	b, err := cl.admin(rtnl.NLEMU_NETNS_EPHEMERAL, nil)
	if err != nil {
		return nil, err
	}
	s := strings.TrimRight(string(b), "\x00")
	if s == "" {
		return nil, nil
	}
	return strings.Split(s, "\x00"), nil
}

// ServerStats fetches the server's counters.
func (cl *Client) ServerStats() (Stats, error) {
	var st Stats
	b, err := cl.admin(rtnl.NLEMU_STATS, nil)
	if err != nil {
		return st, err
	}
	err = json.Unmarshal(b, &st)
	return st, err
}
