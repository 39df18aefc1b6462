package nsmgr

import "github.com/nlemu/nlemu/rtnl"

// withWarning is the outcome of a request whose liberal attribute parse
// left warning w in the extack (__nla_validate_parse()'s "bytes leftover
// after parsing attributes", set with NL_SET_ERR_MSG and not cleared): a
// success is acknowledged with it, an error without its own text keeps it,
// and an error with a text replaces it, as a later NL_SET_ERR_MSG does.
func withWarning(w string, err *rtnl.Error) *rtnl.Error {
	switch {
	case w == "":
		return err
	case err == nil:
		return &rtnl.Error{Msg: w}
	case err.Msg == "":
		e := *err
		e.Msg = w
		return &e
	}
	return err
}
