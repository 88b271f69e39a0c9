package rtnl

import (
	"github.com/mdlayher/netlink"
	"golang.org/x/sys/unix"
)

// body is a message's body: its header struct hdr, then the attributes ae
// encoded.
func body(hdr []byte, ae *netlink.AttributeEncoder) ([]byte, error) {
	attrs, err := ae.Encode()
	if err != nil {
		return nil, err
	}
	return append(append(make([]byte, 0, len(hdr)+len(attrs)), hdr...), attrs...), nil
}

// AppendRequest appends to b a netlink request of type typ (RTM_*) with
// flags (NLM_F_REQUEST is added), sequence number seq and body, for a
// writer that sends several requests in one datagram.
func AppendRequest(b []byte, typ, flags uint16, seq uint32, body []byte) ([]byte, error) {
	m := netlink.Message{
		Header: netlink.Header{Length: uint32(attrAlign(unix.SizeofNlMsghdr + len(body))), Type: netlink.HeaderType(typ),
			Flags: netlink.HeaderFlags(flags) | netlink.Request, Sequence: seq},
		Data: body,
	}
	raw, err := m.MarshalBinary()
	if err != nil {
		return b, err
	}
	return append(b, raw...), nil
}
