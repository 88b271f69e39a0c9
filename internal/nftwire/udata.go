package nftwire

import (
	"encoding/hex"
)

// A rule's user data is a list of type-length-value records (libnftnl's
// udata: one byte of type, one of length). nft reads type 0 (the comment)
// and 1 and ignores the others, so our marker does not show in `nft list`
// and a rule lists the same with it or without it.
const (
	udataOldID = 0xe0 // netreconcile before rules were compiled by nft: a hash of our own canonical text
	udataText  = 0xe1 // the file's text, when it fits
	udataKey   = 0xe2 // the compile key (model.NftRule.Key), 16 bytes
	udataFP    = 0xe3 // the fingerprint of the bytecode written, 16 bytes
	udataShape = 0xe4 // its shape's fingerprint (ShapeFingerprint), 16 bytes
	// udataMax is NFT_USERDATA_MAXLEN: the kernel refuses more.
	udataMax = 256
)

// Marker is what netreconcile keeps in the user data of a rule it writes:
// the key of the text it compiled the rule from and the fingerprint of the
// bytecode it wrote. A rule whose bytecode still hashes to the fingerprint
// is intact, and equals any declared rule of the same key without a compile.
type Marker struct {
	Key, Fingerprint, Shape string // hex
	Text                    string // the file's text, "" when it did not fit
}

// SplitUData separates a rule's user data into nft's records and our
// marker. User data that is not a record list is all nft's.
func SplitUData(ud []byte) (nft []byte, m Marker) {
	ok := true
	var kept []byte
	for b := ud; len(b) > 0; {
		if len(b) < 2 || int(b[1])+2 > len(b) {
			ok = false
			break
		}
		typ, v := b[0], b[2:2+int(b[1])]
		switch typ {
		case udataKey:
			m.Key = hex.EncodeToString(v)
		case udataFP:
			m.Fingerprint = hex.EncodeToString(v)
		case udataShape:
			m.Shape = hex.EncodeToString(v)
		case udataText:
			m.Text = string(v)
		case udataOldID:
		default:
			kept = append(kept, b[:2+len(v)]...)
		}
		b = b[2+len(v):]
	}
	if !ok {
		return ud, Marker{}
	}
	if m.Key == "" || m.Fingerprint == "" {
		m.Key, m.Fingerprint, m.Shape = "", "", ""
	}
	return kept, m
}

// AppendMarker appends the marker's records to nft's user data. The text
// goes only when the whole fits the kernel's limit; key and fingerprint
// always fit (nft's own records are at most a comment of 128 bytes).
func AppendMarker(nft []byte, m Marker) ([]byte, error) {
	key, err := hex.DecodeString(m.Key)
	if err != nil {
		return nil, err
	}
	fp, err := hex.DecodeString(m.Fingerprint)
	if err != nil {
		return nil, err
	}
	out := append([]byte(nil), nft...)
	out = append(out, udataKey, byte(len(key)))
	out = append(out, key...)
	out = append(out, udataFP, byte(len(fp)))
	out = append(out, fp...)
	if m.Shape != "" {
		shape, err := hex.DecodeString(m.Shape)
		if err != nil {
			return nil, err
		}
		out = append(out, udataShape, byte(len(shape)))
		out = append(out, shape...)
	}
	if t := m.Text; t != "" && len(t) <= 255 && len(out)+2+len(t) <= udataMax {
		out = append(out, udataText, byte(len(t)))
		out = append(out, t...)
	}
	return out, nil
}
