/**
 * Calendar times of a trace turned into epoch seconds, field by field and
 * checked, instead of through `Date`: `Date.parse` rolls an impossible date
 * over (`2026-02-30` becomes 2 March, `T24:00` the next day) and `Date.UTC`
 * reads the years 0 to 99 as 1900 to 1999, so a trace would be moved in time
 * without a word.
 */

/** A date and time of day as written, months from 1, with the zone's offset east of UTC. */
export interface CalendarTime {
  year: number;
  month: number;
  day: number;
  hour: number;
  minute: number;
  second: number;
  offsetSign: 1 | -1;
  offsetHours: number;
  offsetMinutes: number;
}

const MONTH_NAMES = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November", "December"];

export function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

export function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Why these fields name no instant (`February 2026 has 28 days`), or undefined when they do. */
export function calendarProblem(time: CalendarTime): string | undefined {
  const { year, month, day, hour, minute, second } = time;
  if (month < 1 || month > 12) return `there is no month ${month}`;
  const days = daysInMonth(year, month);
  if (day < 1 || day > days) return `${MONTH_NAMES[month - 1]} ${year} has ${days} days`;
  if (hour > 23) return `the hour is ${hour}, past 23`;
  if (minute > 59) return `the minute is ${minute}, past 59`;
  if (second > 59) return `the second is ${second}, past 59`;
  if (time.offsetHours > 23 || time.offsetMinutes > 59) return `the zone offset is not between -23:59 and +23:59`;
  return undefined;
}

/**
 * Whole seconds since 1970-01-01T00:00:00Z of a checked calendar time
 * (proleptic Gregorian calendar, days counted as in Howard Hinnant's
 * `days_from_civil`).
 */
export function epochSecondsOf(time: CalendarTime): number {
  const { month, day } = time;
  const year = time.year - (month <= 2 ? 1 : 0);
  const era = Math.floor(year / 400);
  const yearOfEra = year - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  const days = era * 146_097 + dayOfEra - 719_468;
  return days * 86_400 + time.hour * 3600 + time.minute * 60 + time.second - time.offsetSign * (time.offsetHours * 3600 + time.offsetMinutes * 60);
}
