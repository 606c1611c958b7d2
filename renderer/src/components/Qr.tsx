// A QR code as an <img> (PNG data URL from the `qrcode` package), dark on white in both colour
// schemes (scanners need the contrast). `data-qr-text` carries the encoded text for tests.
import QRCode from 'qrcode';
import { useEffect, useState } from 'react';

export function QrImage({ text, label, size = 220 }: { text: string; label: string; size?: number }) {
  const [src, setSrc] = useState('');
  const [failed, setFailed] = useState(false);
  useEffect(() => {
    let live = true;
    setFailed(false);
    QRCode.toDataURL(text, { margin: 2, width: size * 2, errorCorrectionLevel: 'M', color: { dark: '#111111', light: '#ffffff' } })
      .then((url) => live && setSrc(url))
      .catch(() => live && setFailed(true));
    return () => {
      live = false;
    };
  }, [text, size]);
  if (failed) return <p className="muted">The QR code could not be drawn (the text is too long for one); copy the URL instead.</p>;
  if (!src) return <span className="qr-frame qr-empty" style={{ width: size, height: size }} aria-hidden="true" />;
  return <img className="qr-frame" src={src} alt={label} width={size} height={size} data-qr-text={text} />;
}
