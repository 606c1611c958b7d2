import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { startBridge } from './store/bridge.ts';
import { startApp } from './store/index.ts';
import './theme.css';
import './styles.css';
import './phone.css';

startBridge();
void startApp();
createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
