// The languages the panel speaks (CONTRACT §14: the account's `language`, en, de, fr or es; any
// other is en), with i18next and one message file per language in locales/. No sentence the panel
// shows is written in its code. Interpolated values are not escaped here: the views escape what
// they print (Eta's auto-escaping), once.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import i18next, { type TFunction } from 'i18next';

export const LANGUAGES = ['en', 'de', 'fr', 'es'] as const;
export type Language = (typeof LANGUAGES)[number];
export type Translate = TFunction;

const resources = Object.fromEntries(
  LANGUAGES.map((language) => [
    language,
    {
      translation: JSON.parse(readFileSync(join(import.meta.dirname, 'locales', `${language}.json`), 'utf8')),
    },
  ]),
);

const i18n = i18next.createInstance();
// The resources are at hand: initialisation is synchronous (initAsync: false).
void i18n.init({
  resources,
  lng: 'en',
  fallbackLng: 'en',
  supportedLngs: [...LANGUAGES],
  initAsync: false,
  interpolation: { escapeValue: false },
  returnNull: false,
});

/** The language the panel speaks to an account whose `language` is `wanted`. */
export function languageOf(wanted: string | null | undefined): Language {
  return (LANGUAGES as readonly string[]).includes(wanted ?? '') ? (wanted as Language) : 'en';
}

/** The panel's messages in `language`. */
export function translator(language: Language): Translate {
  return i18n.getFixedT(language);
}

/** True when `key` has a message (in the language or in English). */
export function hasMessage(t: Translate, key: string): boolean {
  return t(key, { defaultValue: '\u0000' }) !== '\u0000';
}
